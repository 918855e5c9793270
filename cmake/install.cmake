# What `make install` installs (cmake --install build/release --prefix PREFIX; docs/install.md):
#   PREFIX/bin/                         dxpu, dxpu-bridge, dxpu-boot, dxpu-manager, dxpu-agent
#   PREFIX/share/dxpu/wireshark/        dxfp.lua, the DxFP dissector
#   PREFIX/share/dxpu/examples/         bridge.json, and the daemons' option files
#   PREFIX/share/doc/dxpu/              README.md and docs/*.md
#   PREFIX/DXPU_SYSTEMD_UNIT_DIR/       dxpu-manager, dxpu-agent, dxpu-bridge, dxpu-boot .service
#   ETC/default/                        dxpu-manager, dxpu-agent, dxpu-bridge, dxpu-boot: the
#                                       daemons' options, installed only where none is there yet
# ETC is /etc for PREFIX /usr or /usr/local, PREFIX/etc for any other prefix. The units name
# PREFIX/bin and ETC/default, both decided when installing (so `--prefix` at install time, not
# the configure-time CMAKE_INSTALL_PREFIX, is what they say). DESTDIR stages everything under
# itself and changes nothing the units say.

set(DXPU_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
  "where the systemd units go: relative to the install prefix, or absolute")

install(TARGETS dxpu dxpu-bridge dxpu-boot dxpu-manager dxpu-agent RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/tools/wireshark/dxfp.lua DESTINATION share/dxpu/wireshark)
install(FILES ${PROJECT_SOURCE_DIR}/bridge-fw/examples/bridge.json
  DESTINATION share/dxpu/examples)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/dxpu)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/dxpu/docs
  FILES_MATCHING PATTERN "*.md" PATTERN "*.svg")

set(dxpu_units dxpu-manager dxpu-agent dxpu-bridge dxpu-boot)
# Run by cmake --install, where CMAKE_INSTALL_PREFIX is the prefix being installed to.
install(CODE "
  set(dxpu_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(dxpu_prefix STREQUAL \"/usr\" OR dxpu_prefix STREQUAL \"/usr/local\")
    set(dxpu_etc /etc)
  else()
    set(dxpu_etc \"\${dxpu_prefix}/etc\")
  endif()
  set(DXPU_ETCDIR \"\${dxpu_etc}\")
  set(DXPU_BINDIR \"\${dxpu_prefix}/bin\")
  set(DXPU_DEFAULTDIR \"\${dxpu_etc}/default\")
  set(DXPU_EXAMPLESDIR \"\${dxpu_prefix}/share/dxpu/examples\")
  set(DXPU_DOCDIR \"\${dxpu_prefix}/share/doc/dxpu\")
  set(unit_dir \"${DXPU_SYSTEMD_UNIT_DIR}\")
  if(NOT IS_ABSOLUTE \"\${unit_dir}\")
    set(unit_dir \"\${dxpu_prefix}/\${unit_dir}\")
  endif()
  # Written where they go (configure_file, @ONLY) and listed in install_manifest.txt as
  # file(INSTALL) lists what it installs.
  set(mode FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  foreach(unit ${dxpu_units})
    foreach(pair \"packaging/systemd/\${unit}.service.in|\${unit_dir}/\${unit}.service\"
        \"packaging/default/\${unit}|\${DXPU_EXAMPLESDIR}/default/\${unit}\")
      string(REPLACE \"|\" \";\" pair \"\${pair}\")
      list(GET pair 0 from)
      list(GET pair 1 to)
      message(STATUS \"Installing: \$ENV{DESTDIR}\${to}\")
      configure_file(\"${PROJECT_SOURCE_DIR}/\${from}\" \"\$ENV{DESTDIR}\${to}\" @ONLY \${mode})
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${to}\")
    endforeach()
  endforeach()
  # The options files are the operator's once installed: never overwritten, and not in
  # install_manifest.txt (make uninstall leaves them, as removing a Debian package keeps its
  # conffiles).
  foreach(unit ${dxpu_units})
    set(to \"\$ENV{DESTDIR}\${DXPU_DEFAULTDIR}/\${unit}\")
    if(EXISTS \"\${to}\")
      message(STATUS \"Keeping: \${to} (yours; the shipped one is in \${DXPU_EXAMPLESDIR}/default)\")
    else()
      message(STATUS \"Installing: \${to}\")
      configure_file(\"${PROJECT_SOURCE_DIR}/packaging/default/\${unit}\" \"\${to}\" @ONLY \${mode})
    endif()
  endforeach()
")
