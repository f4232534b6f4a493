# SPDX-License-Identifier: Apache-2.0
# Run by `cmake --install` (cmake/AcpInstall.cmake's install(CODE)): writes acp.pc for the prefix
# being installed to, which may differ from the configured one (--prefix), then installs it
# (file(INSTALL) honours DESTDIR and records it in install_manifest.txt).
set(ACP_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(ACP_PC_LIBDIR "\${prefix}/${ACP_PC_LIBDIR_REL}")
set(ACP_PC_INCLUDEDIR "\${prefix}/${ACP_PC_INCLUDEDIR_REL}")
set(ACP_PC_CFLAGS "-I\${includedir}")
configure_file("${ACP_PC_IN}" "${ACP_PC_OUT}" @ONLY)
file(INSTALL "${ACP_PC_OUT}" DESTINATION "${CMAKE_INSTALL_PREFIX}/${ACP_PC_LIBDIR_REL}/pkgconfig")
