# SPDX-License-Identifier: Apache-2.0
# Runs docs/examples/poll_client against acp-agent: it must exit 0 (sanitizers included) and
# print exactly the agent's echo of its prompt and the stop reason.
execute_process(COMMAND ${PROG} ${AGENT} --store :memory: --log-level quiet
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
set(want "Hello from a poll() loop\nstop: end_turn\n")
if(NOT rc EQUAL 0 OR NOT out STREQUAL want)
  message(FATAL_ERROR "poll_client exited ${rc}; stdout:\n${out}\nstderr:\n${err}\nwanted stdout:\n${want}")
endif()
