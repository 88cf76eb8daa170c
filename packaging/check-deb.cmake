# Builds the Debian package from a configured build tree and checks what it holds.
#   cmake -DBUILD_DIR=... -DOUT_DIR=... -DCPACK=/path/to/cpack -P check-deb.cmake
file(REMOVE_RECURSE "${OUT_DIR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
execute_process(COMMAND ${CPACK} -G DEB -B "${OUT_DIR}" --config "${BUILD_DIR}/CPackConfig.cmake"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack failed (${rc}):\n${out}\n${err}")
endif()
file(GLOB debs "${OUT_DIR}/*.deb")
list(LENGTH debs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one .deb in ${OUT_DIR}, found ${n}: ${debs}")
endif()
execute_process(COMMAND dpkg-deb --contents ${debs} OUTPUT_VARIABLE contents RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb cannot read ${debs}")
endif()
execute_process(COMMAND dpkg-deb --field ${debs} Package Version Depends OUTPUT_VARIABLE fields)
foreach(expected
    "./usr/bin/kernel-workbench" "./usr/bin/kwb" "./usr/bin/kwb-worker"
    "./usr/share/kernel-workbench/kernels/softmax/task.toml"
    "./usr/share/kernel-workbench/kernels/sgemm/reference.cu"
    "./usr/share/applications/kernel-workbench.desktop"
    "./usr/share/icons/hicolor/scalable/apps/kernel-workbench.svg"
    "./usr/share/icons/hicolor/16x16/apps/kernel-workbench.png"
    "./usr/share/icons/hicolor/48x48/apps/kernel-workbench.png"
    "./usr/share/icons/hicolor/256x256/apps/kernel-workbench.png"
    "./usr/share/icons/hicolor/512x512/apps/kernel-workbench.png"
    "./usr/share/metainfo/io.kernel_workbench.KernelWorkbench.metainfo.xml"
    "./usr/share/man/man1/kwb.1.gz"
    "./usr/share/man/man1/kernel-workbench.1.gz")
  string(FIND "${contents}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${debs} lacks ${expected}; it holds:\n${contents}")
  endif()
endforeach()
foreach(dep "libqt6widgets6" "libsqlite3-0" "libqscintilla2-qt6" "qt6-qpa-plugins" "libqt6svg6")
  string(FIND "${fields}" "${dep}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${debs} does not depend on ${dep}:\n${fields}")
  endif()
endforeach()
# The metadata as software centres read it: AppStream and the desktop entry, from the package itself.
file(REMOVE_RECURSE "${OUT_DIR}/x")
execute_process(COMMAND dpkg-deb -x ${debs} "${OUT_DIR}/x" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb cannot unpack ${debs}")
endif()
foreach(check
    "appstreamcli;validate;--no-net;${OUT_DIR}/x/usr/share/metainfo/io.kernel_workbench.KernelWorkbench.metainfo.xml"
    "desktop-file-validate;${OUT_DIR}/x/usr/share/applications/kernel-workbench.desktop")
  execute_process(COMMAND ${check} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${check} failed (${rc}):\n${out}\n${err}\n(packaging/install-deps.sh installs appstream and desktop-file-utils)")
  endif()
endforeach()
message(STATUS "package ok: ${debs}\n${fields}")
