// The library fence of a host launcher's process (core/sandbox/library_fence.h), without a GPU:
// which files count as a fenced vendor library, which folders are library folders, and, in a
// child process that raises the fence for real (Landlock), that a fenced library cannot be
// opened by its name, through a symbolic link with another name, as a copy outside the library
// folders, or by linking it into an allowed folder, while the other files stay readable.
#include <QtTest>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>

#include "core/sandbox/library_fence.h"

namespace fs = std::filesystem;
using kwb::worker::fencedOff;

namespace {

void write(const fs::path &p, const std::string &text) { std::ofstream(p, std::ios::binary) << text; }

bool landlockAvailable() { return ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1 /* VERSION */) >= 1; }

// `body` in a child process (the fence is raised on that process only): its return value as the
// exit status, or -1 when the child did not exit normally.
int exitStatusOfChild(const std::function<int()> &body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

class TestLibraryFence : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  fs::path root() const { return dir_.path().toStdString(); }

 private slots:
  void fencedByNameAndByWhereLinksLead() {
    const fs::path libs = root() / "names";
    fs::create_directories(libs);
    write(libs / "libcublas.so.13", "not really cuBLAS");
    write(libs / "libcublasLt.so.13", "nor cuBLASLt");
    write(libs / "libm.so.6", "a plain library");
    fs::create_symlink(libs / "libcublas.so.13", libs / "libharmless.so");
    QVERIFY(fencedOff(libs / "libcublas.so.13", {}));
    QVERIFY(fencedOff(libs / "libharmless.so", {}));  // the name the link leads to
    QVERIFY(!fencedOff(libs / "libm.so.6", {}));
    QVERIFY(!fencedOff(libs / "libcublas.so.13", {"cublas"}));
    // cuBLAS loads cuBLASLt: allowing one allows both.
    QVERIFY(!fencedOff(libs / "libcublasLt.so.13", {"cublas"}));
    QVERIFY(fencedOff(libs / "libcublasLt.so.13", {"cufft"}));
  }

  void libraryFoldersAreExistingAndUnique() {
    const fs::path a = root() / "fa", b = root() / "fb";
    fs::create_directories(a);
    fs::create_directories(b);
    const std::string maps = "7f00-7f01 r-xp 0 08:01 1 " + (a / "libx.so").string() + "\n" +
                             "7f01-7f02 r--p 0 00:00 0 [heap]\n" +
                             "7f02-7f03 r-xp 0 08:01 2 " + (b / "liby.so").string() + " (deleted)\n";
    const auto folders =
        kwb::worker::libraryFolders("# comment\n" + b.string() + "\n", a.string() + ":/nonexistent:" + b.string(), maps);
    const auto count = [&](const fs::path &p) { return std::count(folders.begin(), folders.end(), p); };
    QCOMPARE(count(a), 1l);
    QCOMPARE(count(b), 1l);
    QCOMPARE(count("/nonexistent"), 0l);
    // ld.so.conf.d's folder comes before LD_LIBRARY_PATH's.
    QVERIFY(std::find(folders.begin(), folders.end(), b) < std::find(folders.begin(), folders.end(), a));
  }

  void fenceMakesTheLibraryUnreachable() {
    if (!landlockAvailable())
      QSKIP("this kernel has no Landlock: the fence cannot be raised here (the worker then says so)");
    const fs::path libs = root() / "libs", open = root() / "open", other = root() / "other";
    for (const auto &d : {libs, open, other}) fs::create_directories(d);
    write(libs / "libcublas.so.13", "not really cuBLAS");
    write(libs / "libok.so", "fine");
    write(other / "libnothing.so", "not really cuBLAS");  // a copy under another name
    fs::create_symlink(libs / "libcublas.so.13", open / "alias.so");
    write(open / "mine.so", "the candidate's own");

    const int code = exitStatusOfChild([&] {
      const auto fence = kwb::worker::raiseLibraryFence({}, {libs}, {open});
      if (!fence.active || fence.fenced.size() != 1) return 100;
      auto opens = [](const fs::path &p) {
        const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) ::close(fd);
        return fd >= 0;
      };
      int bad = 0;
      if (!opens(libs / "libok.so")) bad |= 1;
      if (!opens(open / "mine.so")) bad |= 2;
      if (opens(libs / "libcublas.so.13")) bad |= 4;
      if (opens(open / "alias.so")) bad |= 8;
      if (opens(other / "libnothing.so")) bad |= 16;
      if (::link((libs / "libcublas.so.13").c_str(), (open / "linked.so").c_str()) == 0) bad |= 32;
      return bad;
    });
    QVERIFY2(code >= 0, "the child did not exit normally");
    QVERIFY2(code != 100, "the fence did not come up, or fenced other than the one library");
    QVERIFY2(!(code & 1), "a library folder's other file became unreadable");
    QVERIFY2(!(code & 2), "an open folder's file became unreadable");
    QVERIFY2(!(code & 4), "the fenced library opened by its own name");
    QVERIFY2(!(code & 8), "the fenced library opened through a symbolic link with another name");
    QVERIFY2(!(code & 16), "a file outside every allowed folder opened");
    QVERIFY2(!(code & 32), "the fenced library could be linked into an allowed folder");
  }

  // The fence a host launcher's process raises, on this system's real folders: a system library
  // not loaded yet still loads (with what it needs), cuBLAS from the CUDA toolkit does not.
  void hostLauncherFenceOnThisSystem() {
    if (!landlockAvailable())
      QSKIP("this kernel has no Landlock: the fence cannot be raised here (the worker then says so)");
    void *probe = ::dlopen("libcublas.so.13", RTLD_LAZY);
    if (!probe) QSKIP("cuBLAS does not load on this machine at all: fencing it off cannot be shown");
    ::dlclose(probe);
    const int code = exitStatusOfChild([&] {
      const auto started = std::chrono::steady_clock::now();
      const auto fence = kwb::worker::raiseHostLauncherFence({}, root());
      std::fprintf(stderr, "fence raised in %.1f ms: %zu library files readable, %zu fenced off\n",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count(),
                   fence.readableFiles, fence.fenced.size());
      if (!fence.active) return 100;
      int bad = 0;
      if (!::dlopen("libz.so.1", RTLD_NOW)) bad |= 1;
      if (::dlopen("libcublas.so.13", RTLD_NOW)) bad |= 2;
      if (::dlopen("libcublasLt.so.13", RTLD_NOW)) bad |= 4;
      return bad;
    });
    QVERIFY2(code >= 0, "the child did not exit normally");
    QVERIFY2(code != 100, "the fence did not come up");
    QVERIFY2(!(code & 1), "libz, an ordinary system library, no longer loads behind the fence");
    QVERIFY2(!(code & 2), "cuBLAS loads behind the fence");
    QVERIFY2(!(code & 4), "cuBLASLt loads behind the fence");
  }
};

QTEST_GUILESS_MAIN(TestLibraryFence)
#include "tst_library_fence.moc"
