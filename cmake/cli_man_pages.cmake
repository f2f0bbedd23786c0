# One man page per `fleetscope` subcommand, each made from that subcommand's --help:
#   cmake -DPROGRAM=path/fleetscope -DVERSION=x.y.z -DOUT_DIR=dir -P cli_man_pages.cmake
# writes OUT_DIR/fleetscope-NAME.1 for every command `fleetscope --help` lists ("share plan"
# becomes fleetscope-share-plan.1), and OUT_DIR/fleetscope.1 (the command list, each page named).
execute_process(COMMAND ${PROGRAM} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --help failed (${rc})")
endif()
string(TIMESTAMP date "%Y-%m-%d" UTC)

# Man-page text of a --help output: backslashes escaped, lines starting with '.' protected.
function(roff_text text result)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "\n\\." "\n\\\\&." text "${text}")
  set(${result} "${text}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR})
string(REPLACE "\n" ";" lines "${top}")
set(in_commands OFF)
set(pages "")
foreach(line IN LISTS lines)
  if(line STREQUAL "commands:")
    set(in_commands ON)
    continue()
  endif()
  # "  NAME[ SUB]  summary": the name is one or two words, then two or more spaces.
  if(NOT in_commands OR NOT line MATCHES "^  ([a-z][a-z0-9-]*( [a-z][a-z0-9-]*)?)  +(.+)$")
    continue()
  endif()
  set(command "${CMAKE_MATCH_1}")
  set(summary "${CMAKE_MATCH_3}")
  string(REPLACE " " ";" words "${command}")
  string(REPLACE " " "-" page "fleetscope-${command}")
  execute_process(COMMAND ${PROGRAM} ${words} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} ${command} --help failed (${rc})")
  endif()
  roff_text("${help}" help)
  string(TOUPPER "${page}" upper)
  file(WRITE ${OUT_DIR}/${page}.1
    ".TH ${upper} 1 \"${date}\" \"fleetscope ${VERSION}\" \"fleetscope\"\n"
    ".SH NAME\n${page} \\- ${summary}\n.SH SYNOPSIS\n.B fleetscope ${command}\n[OPTIONS]\n"
    ".SH DESCRIPTION\n.nf\n${help}.fi\n"
    ".SH SEE ALSO\nfleetscope(1); docs in /usr/share/doc/fleetscope\n")
  list(APPEND pages "${page}(1)")
endforeach()
if(NOT pages)
  message(FATAL_ERROR "${PROGRAM} --help lists no commands")
endif()
roff_text("${top}" top)
list(JOIN pages ", " see_also)
file(WRITE ${OUT_DIR}/fleetscope.1
  ".TH FLEETSCOPE 1 \"${date}\" \"fleetscope ${VERSION}\" \"fleetscope\"\n"
  ".SH NAME\nfleetscope \\- GPU fleet efficiency toolkit: trace, analyze, share GPUs\n"
  ".SH DESCRIPTION\n.nf\n${top}.fi\n"
  ".SH SEE ALSO\n${see_also}, fleetscoped(8), fleetscope-gui(1); docs in /usr/share/doc/fleetscope\n")
