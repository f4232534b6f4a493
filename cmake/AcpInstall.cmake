# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` puts where (GNUInstallDirs), and how programs find it afterwards:
# acp.pc for pkg-config, acp-uninstalled.pc for building against this build tree, and the CMake
# package acpConfig.cmake (imported targets acp::acp and acp::acp_static). Included from the
# top-level CMakeLists.txt once the targets acp and acp_static exist.

# The dependencies of libacp, in one place: the .pc file and the CMake package both use them.
# Public: the public headers include <jansson.h> and <uv.h>. Private: what libacp.a's objects
# call; libcurl and libpq are loaded with dlopen on first use (mcp/libcurl_lazy.c,
# store/libpq_lazy.c), so they appear only as -ldl. wslay ships no .pc in Debian: a plain -l.
set(ACP_REQUIRES jansson libuv)
set(ACP_REQUIRES_PRIVATE sqlite3 openssl libnghttp2)
set(ACP_LIBS_PRIVATE wslay dl pthread)

install(TARGETS acp acp_static LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/acp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_BINARY_DIR}/include/acp/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/acp)
install(FILES docs/acp.1 docs/acp-agent.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES docs/libacp.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
# Shell completions where bash-completion and Debian's zsh look for them.
install(FILES completions/acp.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME acp)
install(FILES completions/acp-agent.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME acp-agent)
install(FILES completions/_acp completions/_acp-agent
  DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)

# acp.pc.in's fields from the lists above.
list(JOIN ACP_REQUIRES " " ACP_PC_REQUIRES)
list(JOIN ACP_REQUIRES_PRIVATE " " ACP_PC_REQUIRES_PRIVATE)
list(TRANSFORM ACP_LIBS_PRIVATE PREPEND "-l" OUTPUT_VARIABLE acp_libs_private)
list(JOIN acp_libs_private " " ACP_PC_LIBS_PRIVATE)

# The uninstalled .pc: pkg-config prefers NAME-uninstalled.pc when it finds one, so
# PKG_CONFIG_PATH=<build> builds a program against this tree's headers and libraries.
set(ACP_PC_PREFIX ${CMAKE_BINARY_DIR})
set(ACP_PC_LIBDIR "\${prefix}")
set(ACP_PC_INCLUDEDIR ${CMAKE_SOURCE_DIR}/include)
set(ACP_PC_CFLAGS "-I\${includedir} -I\${prefix}/include") # + the generated acp/version.h
configure_file(acp.pc.in ${CMAKE_BINARY_DIR}/acp-uninstalled.pc @ONLY)

# The installed .pc and CMake package are written at install time, when the prefix is known for
# certain: `cmake --install --prefix P` overrides the configured one. Absolute paths from that
# prefix are what distributions expect (libdir=${prefix}/lib/x86_64-linux-gnu for /usr on
# Debian), and they follow PKG_CONFIG_SYSROOT_DIR into an unpacked root.
# Both assume the relative directories GNUInstallDirs gives.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    message(FATAL_ERROR "CMAKE_INSTALL_${dir} must be relative to the prefix (libacp's .pc and CMake package are relocated with it)")
  endif()
endforeach()
set(ACP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/acp)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/acpConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
# The package finds the installation from its own location: the relative path back to the prefix.
file(RELATIVE_PATH ACP_CMAKE_TO_PREFIX /prefix/${ACP_CMAKE_DIR} /prefix)
configure_file(cmake/acpConfig.cmake.in ${CMAKE_BINARY_DIR}/acpConfig.cmake @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/acpConfig.cmake ${CMAKE_BINARY_DIR}/acpConfigVersion.cmake
  DESTINATION ${ACP_CMAKE_DIR})

install(CODE "
  set(ACP_PC_LIBDIR_REL [[${CMAKE_INSTALL_LIBDIR}]])
  set(ACP_PC_INCLUDEDIR_REL [[${CMAKE_INSTALL_INCLUDEDIR}]])
  set(ACP_PC_IN [[${CMAKE_SOURCE_DIR}/acp.pc.in]])
  set(ACP_PC_OUT [[${CMAKE_BINARY_DIR}/install/acp.pc]])
  set(PROJECT_VERSION [[${PROJECT_VERSION}]])
  set(ACP_PC_REQUIRES [[${ACP_PC_REQUIRES}]])
  set(ACP_PC_REQUIRES_PRIVATE [[${ACP_PC_REQUIRES_PRIVATE}]])
  set(ACP_PC_LIBS_PRIVATE [[${ACP_PC_LIBS_PRIVATE}]])
  include([[${CMAKE_CURRENT_LIST_DIR}/AcpInstallPc.cmake]])")
