#!/usr/bin/env bash
# A relocatable bundle of the workbench (an AppImage-style folder and its tarball) that runs on
# another Linux distribution without Qt installed: the programs with their own libraries (Qt,
# QScintilla, SQLite, curl, Graphviz, ... found by ldd; not glibc, and not the CUDA or NVIDIA
# libraries, which are the machine's own and loaded at run time), the Qt plugins it needs
# (platforms xcb, wayland-free offscreen and minimal; SVG icons and images), Graphviz's layout
# plugins, DejaVu fonts for machines without any, the bundled tasks, prompts, man pages and icon.
# Each program finds its libraries through its RUNPATH ($ORIGIN/../lib, set by patchelf) and Qt
# its plugins through qt.conf, so the folder can be moved anywhere; AppRun and kwb beside them set
# what must be set at run time (fonts where the machine has none, Graphviz's plugin folder).
#   packaging/make-bundle.sh BUILD_DIR OUT_DIR      -> OUT_DIR/kernel-workbench-VERSION-ARCH{,.tar.gz}
# Run it: OUT_DIR/kernel-workbench-VERSION-ARCH/AppRun [TASK]   (the window)
#         OUT_DIR/kernel-workbench-VERSION-ARCH/kwb ...          (the command line)
set -euo pipefail
build=$(realpath "$1"); out=$(realpath -m "$2")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v patchelf > /dev/null || { echo "make-bundle: needs patchelf (packaging/install-deps.sh)" >&2; exit 1; }
version=$("$build/app/cli/kwb" --version | grep -o '[0-9][0-9.]*' | head -n1)
arch=$(uname -m)
name="kernel-workbench-$version-$arch"
dir="$out/$name"
rm -rf "$dir" "$out/$name.tar.gz"
mkdir -p "$dir/usr/bin" "$dir/usr/lib" "$dir/usr/plugins" "$dir/usr/share/kernel-workbench" "$dir/usr/share/fonts" \
  "$dir/usr/share/man/man1" "$dir/usr/lib/graphviz"

# Libraries a machine brings itself: the C library and loader, and the GPU's driver and toolkit.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libgcc_s\.so|libcuda\.so|libnvidia|libnvrtc|libcupti|libcudart|libcublas|libnvJitLink|libnvperf|libGLX_nvidia|libEGL_nvidia)'
copy_libs() {  # the libraries FILE needs, into usr/lib, each with RUNPATH $ORIGIN
  ldd "$1" 2> /dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r lib path; do
    [[ $lib =~ $skip ]] && continue
    [ -e "$dir/usr/lib/$lib" ] && continue
    cp -L "$path" "$dir/usr/lib/$lib"
    chmod u+w "$dir/usr/lib/$lib"
    patchelf --set-rpath '$ORIGIN' "$dir/usr/lib/$lib"
  done
}
for program in "$build/app/gui/kernel-workbench" "$build/app/cli/kwb" "$build/app/worker/kwb-worker"; do
  cp -L "$program" "$dir/usr/bin/"
  copy_libs "$program"
  patchelf --set-rpath '$ORIGIN/../lib' "$dir/usr/bin/$(basename "$program")"
done
strip --strip-debug "$dir/usr/bin/"* "$dir/usr/lib/"*.so* 2> /dev/null || true

# Qt's plugins: where the window draws, and SVG icons and images.
qtplugins=$(dirname "$(dirname "$(find /usr/lib -path '*qt6/plugins/platforms/libqoffscreen.so' | head -n1)")")
for plugin in platforms/libqxcb.so platforms/libqoffscreen.so platforms/libqminimal.so \
  xcbglintegrations/libqxcb-glx-integration.so imageformats/libqsvg.so iconengines/libqsvgicon.so; do
  [ -e "$qtplugins/$plugin" ] || continue
  mkdir -p "$dir/usr/plugins/$(dirname "$plugin")"
  cp -L "$qtplugins/$plugin" "$dir/usr/plugins/$plugin"
  copy_libs "$qtplugins/$plugin"
  patchelf --set-rpath '$ORIGIN/../../lib' "$dir/usr/plugins/$plugin"
done
printf '[Paths]\nPrefix = ..\nPlugins = plugins\n' > "$dir/usr/bin/qt.conf"

# Graphviz lays the experience graph out with plugins it loads at run time.
gvdir=$(dirname "$(find /usr/lib -name 'libgvplugin_dot_layout.so.6' | head -n1)")
for plugin in libgvplugin_core.so.6 libgvplugin_dot_layout.so.6; do
  cp -L "$gvdir/$plugin" "$dir/usr/lib/graphviz/"
  copy_libs "$gvdir/$plugin"
  patchelf --set-rpath '$ORIGIN/..' "$dir/usr/lib/graphviz/$plugin"
done
cp -L "$gvdir"/config6* "$dir/usr/lib/graphviz/"

# Data: tasks, prompts, fonts, man pages, the icon and desktop entry.
cp -r "$root/kernels" "$dir/usr/share/kernel-workbench/kernels"
cp -r "$root/resources/prompts" "$dir/usr/share/kernel-workbench/prompts"
cp -r "$root/resources/python" "$dir/usr/share/kernel-workbench/python"
cp -r "$root/resources/guide" "$dir/usr/share/kernel-workbench/guide"
cp -r "$root/resources/screenshots" "$dir/usr/share/kernel-workbench/screenshots"
cp -L /usr/share/fonts/truetype/dejavu/DejaVuSans*.ttf "$dir/usr/share/fonts/" 2> /dev/null || true
for page in kwb.1 kernel-workbench.1; do gzip -9 -n -c "$root/packaging/$page" > "$dir/usr/share/man/man1/$page.gz"; done
cp "$root/resources/icons/kernel-workbench.svg" "$dir/kernel-workbench.svg"
cp "$root/packaging/kernel-workbench.desktop" "$dir/kernel-workbench.desktop"

# The entry points: set what depends on where the folder is, then run the program.
cat > "$dir/.bundle-env" << 'ENV'
here=$(dirname "$(readlink -f "$0")")
export GVBINDIR="$here/usr/lib/graphviz"
# A machine without fonts of its own (a server, a container) gets the bundle's.
if [ ! -e /etc/fonts/fonts.conf ] && [ -z "${FONTCONFIG_FILE:-}" ]; then
  conf="${XDG_RUNTIME_DIR:-/tmp}/kernel-workbench-fonts-$(id -u).conf"
  printf '<?xml version="1.0"?>\n<fontconfig><dir>%s</dir><cachedir>%s</cachedir></fontconfig>\n' \
    "$here/usr/share/fonts" "${XDG_CACHE_HOME:-/tmp}/kernel-workbench-fontconfig" > "$conf"
  export FONTCONFIG_FILE="$conf"
fi
# No display: draw offscreen.
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  export QT_QPA_PLATFORM=offscreen
fi
ENV
printf '#!/bin/sh\n. "$(dirname "$(readlink -f "$0")")/.bundle-env"\nexec "$here/usr/bin/kernel-workbench" "$@"\n' > "$dir/AppRun"
printf '#!/bin/sh\n. "$(dirname "$(readlink -f "$0")")/.bundle-env"\nexec "$here/usr/bin/kwb" "$@"\n' > "$dir/kwb"
chmod +x "$dir/AppRun" "$dir/kwb"
ln -s AppRun "$dir/kernel-workbench"
cat > "$dir/README" << EOF
Kernel Workbench $version ($arch), a relocatable bundle: move the folder anywhere.
  ./AppRun [TASK-FOLDER]     the window (offscreen where there is no display)
  ./kwb --help               the command line
The bundled tasks are in usr/share/kernel-workbench/kernels. The GPU's driver (and, for host
launchers, the CUDA toolkit's nvcc) are the machine's own: without a driver it compiles only.
EOF
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "make-bundle: $dir ($(du -sh "$dir" | cut -f1)), $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
