# Install rules and the Debian package. `cmake --install build/dev --prefix P` puts the programs,
# the agent (with the CUPTI it was built against, beside it, where the agent looks first), the
# systemd unit, the default daemon config, man pages made from --help, and the docs under P;
# `cpack --config build/dev/CPackConfig.cmake` (or the `package` target) builds the .deb.
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
  install(TARGETS fleetscope_agent LIBRARY DESTINATION lib/fleetscope)  # where `fleetscope run` looks
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

set(man_dir ${CMAKE_BINARY_DIR}/man)
add_custom_command(OUTPUT ${man_dir}/fleetscope.1 ${man_dir}/fleetscoped.8
  COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fleetscope> -DNAME=fleetscope -DSECTION=1
          "-DSUMMARY=GPU fleet efficiency toolkit: trace, analyze, share GPUs" -DVERSION=${FLEETSCOPE_VERSION}
          -DOUT=${man_dir}/fleetscope.1 -P ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fleetscoped> -DNAME=fleetscoped -DSECTION=8
          "-DSUMMARY=fleetscope host daemon" -DVERSION=${FLEETSCOPE_VERSION}
          -DOUT=${man_dir}/fleetscoped.8 -P ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake
  DEPENDS fleetscope fleetscoped ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake)
add_custom_target(fleetscope_man_pages ALL DEPENDS ${man_dir}/fleetscope.1 ${man_dir}/fleetscoped.8)
install(FILES ${man_dir}/fleetscope.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
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
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the programs' shared libraries (dpkg-shlibdeps)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # install with prefix /usr under DESTDIR, so the config lands in /etc
set(CPACK_INSTALL_PREFIX /usr)
file(WRITE ${CMAKE_BINARY_DIR}/debian/conffiles "/etc/fleetscope/fleetscoped.conf\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/conffiles)
include(CPack)
