# Turns a program's --help into a man page (no help2man in Debian's build-essential set):
#   cmake -DPROGRAM=path -DNAME=fleetscoped -DSECTION=8 -DSUMMARY=... -DOUT=file -P help_to_man.cmake
execute_process(COMMAND ${PROGRAM} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --help failed (${rc})")
endif()
string(TIMESTAMP date "%Y-%m-%d" UTC)
string(REPLACE "\\" "\\e" help "${help}")
string(REGEX REPLACE "\n\\." "\n\\\\&." help "${help}")
string(TOUPPER "${NAME}" upper)
file(WRITE ${OUT} ".TH ${upper} ${SECTION} \"${date}\" \"fleetscope ${VERSION}\" \"fleetscope\"\n"
  ".SH NAME\n${NAME} \\- ${SUMMARY}\n.SH DESCRIPTION\n.nf\n${help}.fi\n"
  ".SH SEE ALSO\nfleetscope(1), fleetscoped(8); docs in /usr/share/doc/fleetscope\n")
