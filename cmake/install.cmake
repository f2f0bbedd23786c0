# Install rules and the Debian package. `cmake --install build/dev --prefix P` puts the programs,
# the agent (with the CUPTI it was built against beside it, in fleetscope's private
# lib/fleetscope: nothing in the system library path, no ldconfig), the systemd unit, the default
# daemon config, man pages made from --help, and the docs under P (`--strip` strips them);
# `cpack --config build/dev/CPackConfig.cmake` (or the `package` target) builds the .deb with
# stripped binaries and their debug symbols in a separate -dbgsym .ddeb.
include(GNUInstallDirs)

install(TARGETS fleetscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fleetscoped RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS fleetscope-gui RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Lane enforcement (docs/sharer.md): the LD_PRELOAD library beside the agent, the standalone
# arbiter, and the public step API header (a no-op without fleetscope).
install(TARGETS fleetscope_interpose LIBRARY DESTINATION lib/fleetscope)
install(TARGETS fleetscope-lane-arbiter RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/sharer/include/fleetscope/step.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fleetscope)
if(FLEETSCOPE_HAVE_CUDA)
  # Where `fleetscope run` looks; the agent opens the CUPTI beside it (its RUNPATH is $ORIGIN), so
  # that copy is private to the traced processes and no other program on the host sees it.
  set_target_properties(fleetscope_agent PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS fleetscope_agent LIBRARY DESTINATION lib/fleetscope)
  if(FLEETSCOPE_CUPTI_LIB)
    get_filename_component(cupti_file "${FLEETSCOPE_CUPTI_LIB}" REALPATH)
    install(FILES ${cupti_file} DESTINATION lib/fleetscope RENAME libcupti.so.13)
  endif()
endif()

# The unit names the installed daemon and its config by absolute path, so it is written at install
# time for the prefix being installed to (the configure-time prefix may differ: --prefix, CPack).
# Under /usr the config goes to /etc/fleetscope (a conffile of the .deb), else to PREFIX/etc.
install(CODE "
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(prefix STREQUAL \"/usr\")
    set(conf_dir /etc/fleetscope)
  else()
    set(conf_dir \"\${prefix}/etc/fleetscope\")
  endif()
  set(FLEETSCOPED_PATH \"\${prefix}/${CMAKE_INSTALL_SBINDIR}/fleetscoped\")
  set(FLEETSCOPED_CONFIG \"\${conf_dir}/fleetscoped.conf\")
  configure_file(\"${CMAKE_SOURCE_DIR}/daemon/fleetscoped.service.in\"
                 \"${CMAKE_BINARY_DIR}/install-unit/fleetscoped.service\" @ONLY)
  file(INSTALL \"${CMAKE_BINARY_DIR}/install-unit/fleetscoped.service\" DESTINATION \"\${prefix}/lib/systemd/system\")
  file(INSTALL \"${CMAKE_SOURCE_DIR}/daemon/fleetscoped.conf\" DESTINATION \"\${conf_dir}\")
")

# Man pages, each made from a --help: fleetscope(1) and one page per subcommand
# (fleetscope-analyze(1), fleetscope-share-plan(1), ...), fleetscope-gui(1),
# fleetscope-lane-arbiter(1), fleetscoped(8).
set(man_dir ${CMAKE_BINARY_DIR}/man)
set(help_to_man -DVERSION=${FLEETSCOPE_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake)
add_custom_command(OUTPUT ${man_dir}/man1.stamp ${man_dir}/fleetscoped.8
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fleetscope> -DVERSION=${FLEETSCOPE_VERSION}
          -DOUT_DIR=${man_dir}/man1 -P ${CMAKE_SOURCE_DIR}/cmake/cli_man_pages.cmake
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fleetscope-gui> -DNAME=fleetscope-gui -DSECTION=1
          "-DSUMMARY=browse fleetscope traces, findings and consolidation plans (Qt)"
          -DOUT=${man_dir}/man1/fleetscope-gui.1 ${help_to_man}
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fleetscope-lane-arbiter>
          -DNAME=fleetscope-lane-arbiter -DSECTION=1
          "-DSUMMARY=the iteration gate of shared GPU lanes, standalone"
          -DOUT=${man_dir}/man1/fleetscope-lane-arbiter.1 ${help_to_man}
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fleetscoped> -DNAME=fleetscoped -DSECTION=8
          "-DSUMMARY=fleetscope host daemon" -DOUT=${man_dir}/fleetscoped.8 ${help_to_man}
  COMMAND ${CMAKE_COMMAND} -E touch ${man_dir}/man1.stamp
  DEPENDS fleetscope fleetscope-gui fleetscope-lane-arbiter fleetscoped
          ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake ${CMAKE_SOURCE_DIR}/cmake/cli_man_pages.cmake
  VERBATIM)
add_custom_target(fleetscope_man_pages ALL DEPENDS ${man_dir}/man1.stamp ${man_dir}/fleetscoped.8)
install(DIRECTORY ${man_dir}/man1/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${man_dir}/fleetscoped.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

file(GLOB docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${docs} ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fleetscope)
set(CPACK_PACKAGE_VERSION ${FLEETSCOPE_VERSION})
set(CPACK_PACKAGE_CONTACT "fleetscope developers <fleetscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU fleet efficiency toolkit: CUPTI agent, analyzer, host daemon")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Stripped programs and libraries in the .deb, their debug symbols in fleetscope-dbgsym (.ddeb,
# found by build id); needs a build with -g (the dev preset, RelWithDebInfo).
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the programs' shared libraries (dpkg-shlibdeps)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # install with prefix /usr under DESTDIR, so the config lands in /etc
set(CPACK_INSTALL_PREFIX /usr)
file(WRITE ${CMAKE_BINARY_DIR}/debian/conffiles "/etc/fleetscope/fleetscoped.conf\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/conffiles)
include(CPack)
