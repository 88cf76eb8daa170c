#pragma once
// The library fence (issue 15, "forbidden libraries through the side door"): a host launcher's
// process makes the vendor libraries its task does not allow unreachable before it opens the
// candidate's library, instead of the worker recognising them after they were loaded.
//
// Landlock, an allow-list the process applies to itself and every process it starts: reading
// and executing files stays allowed in the folders a CUDA program needs whole (/dev, /proc,
// /sys, /etc, /run, /tmp, /var/tmp, $TMPDIR, /usr/share, the C library's locale, gconv and hwcaps
// folders, the candidate library's folder) and, in
// each library folder (the dynamic loader's, those of /etc/ld.so.conf and ld.so.conf.d, $LD_LIBRARY_PATH's and
// those of the files the process has mapped), file by file, except the files that are — by their
// own name or the name their symbolic links lead to — a vendor library (kVendorLibraries) the
// task does not allow. Everything else on the file system is unreadable, so a copy of cuBLAS in
// a Python wheel cannot be loaded either. (A copy renamed into a library folder by whoever
// administers the machine would stay readable: the rules go by file, and the names are all
// that tells a vendor library there.) Linking or renaming a file
// into another folder is refused too (Landlock's REFER right), so no allowed folder can be
// given a link to a fenced file. Without Landlock (a kernel before 5.13, or one built without
// it) the fence says why and the worker's after-the-fact check of the mapped files remains.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace kwb::worker {

// Folders (colon-separated) a host launcher's fence leaves readable whole: set by the client in
// the environment of a worker it starts under a tool (compute-sanitizer's own folder), never by
// candidate code, which runs only after the fence is up.
inline constexpr const char *kFenceOpenVariable = "KWB_FENCE_OPEN";

struct LibraryFence {
  bool active = false;
  int abi = 0;                       // Landlock's ABI version; 0 when there is none
  std::string problem;               // why the fence is not up
  std::vector<std::string> fenced;   // "cublas (/usr/local/cuda/lib64/libcublas.so.13)"
  std::size_t readableFiles = 0;     // library files left readable
};

// Whether `file` is a vendor library `allowed` (with withLibraryDependencies) does not name, by
// its own name or that of the file its symbolic links lead to (pure but for resolving the links).
bool fencedOff(const std::filesystem::path &file, const std::vector<std::string> &allowed);

// The library folders to allow file by file: the dynamic loader's defaults, the absolute paths
// listed in `ldSoConf` (the text of /etc/ld.so.conf.d/*.conf), those of `ldLibraryPath`, and the
// folders of the files mapped in `maps` (the text of /proc/self/maps). Existing folders only,
// each once, in that order.
std::vector<std::filesystem::path> libraryFolders(const std::string &ldSoConf, const std::string &ldLibraryPath,
                                                  const std::string &maps);

// Raises the fence on this process: `libraries` file by file, `open` whole. Returns what it did.
LibraryFence raiseLibraryFence(const std::vector<std::string> &allowed,
                               const std::vector<std::filesystem::path> &libraries,
                               const std::vector<std::filesystem::path> &open);

// The fence for a host launcher's process: the folders above, read from this system, and
// `candidateFolder`.
LibraryFence raiseHostLauncherFence(const std::vector<std::string> &allowed,
                                    const std::filesystem::path &candidateFolder);

}  // namespace kwb::worker
