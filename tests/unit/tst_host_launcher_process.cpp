// `kwb-worker --host-launcher`, the process a host launcher's code runs in (issue 15), started as
// the worker starts it: requests on fd 3, answers on fd 4, stdin from /dev/null, stdout into
// stderr. Without a GPU (or with a library that does not load) its first and only line is an
// error naming what failed, in the grammar the worker reads ("error NAME MESSAGE"), and it exits
// without reading a request. (Launches are tests/gpu/tst_gpu_eval.cpp's.)
#include <QtTest>

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/worker/server/host_launcher.h"

namespace {

struct ChildRun {
  std::string answer;  // everything the child wrote on fd 4
  int status = -1;
};

ChildRun runChild(const std::string &worker, const std::string &library) {
  int request[2], answer[2];
  if (::pipe2(request, O_CLOEXEC) != 0 || ::pipe2(answer, O_CLOEXEC) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::fcntl(request[0], F_DUPFD, 100), out = ::fcntl(answer[1], F_DUPFD, 100);
    ::dup2(in, 3);
    ::dup2(out, 4);
    ::execl(worker.c_str(), "kwb-worker", "--host-launcher", library.c_str(), "--device", "0", nullptr);
    ::_exit(127);
  }
  ::close(request[0]);
  ::close(answer[1]);
  ChildRun run;
  char buffer[4096];
  for (ssize_t n; (n = ::read(answer[0], buffer, sizeof buffer)) > 0;) run.answer.append(buffer, std::size_t(n));
  ::close(answer[0]);
  ::close(request[1]);
  ::waitpid(pid, &run.status, 0);
  return run;
}

}  // namespace

class TestHostLauncherProcess : public QObject {
  Q_OBJECT

 private slots:
  void aLibraryThatCannotRunIsAnErrorLine() {
    const auto worker = qEnvironmentVariable("KWB_WORKER").toStdString();
    QVERIFY2(!worker.empty(), "run through ctest: KWB_WORKER names kwb-worker");
    const auto run = runChild(worker, "/nonexistent/candidate.so");
    QVERIFY2(run.answer.rfind("error ", 0) == 0, run.answer.c_str());
    QCOMPARE(run.answer.back(), '\n');
    QCOMPARE(std::count(run.answer.begin(), run.answer.end(), '\n'), 1);  // one line, then it ends
    const bool noDevice = run.answer.rfind("error no-device ", 0) == 0;
    const bool noLibrary = run.answer.rfind("error dlopen ", 0) == 0 &&
                           run.answer.find("/nonexistent/candidate.so") != std::string::npos;
    QVERIFY2(noDevice || noLibrary, run.answer.c_str());
    QVERIFY(WIFEXITED(run.status));
    QCOMPARE(WEXITSTATUS(run.status), 1);
  }

  // The worker's side (HostLauncherProcess::start) against the real program: the child's error
  // line becomes the load failure's name and message, and the child is reaped (no zombie left).
  void theWorkerSideReadsTheErrorLine() {
    const auto worker = qEnvironmentVariable("KWB_WORKER").toStdString();
    std::string name, problem;
    auto process = kwb::worker::HostLauncherProcess::start("/nonexistent/candidate.so", 0, name, problem, worker);
    if (process) QSKIP("the library loaded?! (a GPU machine with that file)");
    QVERIFY2(name == "no-device" || name == "dlopen", (name + ": " + problem).c_str());
    QVERIFY2(!problem.empty(), name.c_str());
    // Every child has been waited for.
    QCOMPARE(::waitpid(-1, nullptr, WNOHANG), -1);
    QCOMPARE(errno, ECHILD);
  }

  // A program that is no kwb-worker answers nothing: the start fails, naming the early end.
  void aChildThatDiesBeforeReadyIsNamed() {
    std::string name, problem;
    auto process = kwb::worker::HostLauncherProcess::start("/nonexistent/candidate.so", 0, name, problem, "/bin/true");
    QVERIFY(!process);
    QCOMPARE(name, std::string("host-launcher-died"));
    QVERIFY2(problem.find("exited with status 0") != std::string::npos, problem.c_str());
  }
};

QTEST_GUILESS_MAIN(TestHostLauncherProcess)
#include "tst_host_launcher_process.moc"
