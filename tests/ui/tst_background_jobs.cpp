// BackgroundJobs alone: jobs run in order on a thread of their own, answers come back on the
// receiver's thread, a newer job of a kind supersedes an older one, cancel(kind) drops an
// answer, a receiver destroyed meanwhile gets nothing, a job that throws does not end the
// thread, destruction runs what has no kind (a service's last writes), and the last answer finds
// the jobs idle.
#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

#include <QEventLoop>
#include <QSignalSpy>
#include <QTimer>
#include <QThread>
#include <QtTest>

#include "ui/services/background_jobs.h"

using kwb::ui::BackgroundJobs;
using kwb::ui::JobTicket;

class TestBackgroundJobs : public QObject {
  Q_OBJECT

 private slots:
  void jobsRunInOrderOffTheGuiThread() {
    BackgroundJobs jobs(QStringLiteral("test-jobs"));
    QObject receiver;
    std::vector<int> order;
    QThread *gui = QThread::currentThread();
    bool answeredOnGui = true, ranOffGui = true;
    int answers = 0;
    for (int i = 0; i < 5; ++i)
      jobs.run(
          &receiver, QString(),
          [i, gui, &ranOffGui](const JobTicket &) {
            ranOffGui = ranOffGui && QThread::currentThread() != gui;
            return i;
          },
          [&](int value) {
            answeredOnGui = answeredOnGui && QThread::currentThread() == gui;
            order.push_back(value);
            ++answers;
          });
    QTRY_COMPARE(answers, 5);
    QCOMPARE(order, (std::vector<int>{0, 1, 2, 3, 4}));
    QVERIFY(ranOffGui);
    QVERIFY(answeredOnGui);
    QTRY_VERIFY(!jobs.isBusy());
  }

  void newestOfAKindWins() {
    BackgroundJobs jobs(QStringLiteral("test-jobs"));
    QObject receiver;
    std::atomic<bool> release{false};
    // The first job holds the thread until released, so the next three queue up behind it.
    jobs.post([&release] {
      while (!release.load()) QThread::msleep(1);
    });
    std::vector<int> answered;
    std::vector<JobTicket> tickets;
    for (int i = 0; i < 3; ++i)
      tickets.push_back(jobs.run(&receiver, QStringLiteral("listing"), [i](const JobTicket &) { return i; },
                                 [&](int value) { answered.push_back(value); }));
    QVERIFY(tickets[0].cancelled());
    QVERIFY(tickets[1].cancelled());
    QVERIFY(!tickets[2].cancelled());
    int other = -1;
    jobs.run(&receiver, QStringLiteral("ceilings"), [](const JobTicket &) { return 7; }, [&](int v) { other = v; });
    jobs.cancel(QStringLiteral("ceilings"));
    release = true;
    QTRY_COMPARE(answered.size(), std::size_t(1));
    QCOMPARE(answered.front(), 2);
    QTRY_VERIFY(!jobs.isBusy());
    QCoreApplication::processEvents();
    QCOMPARE(other, -1);
  }

  void aDestroyedReceiverGetsNothing() {
    BackgroundJobs jobs(QStringLiteral("test-jobs"));
    auto receiver = std::make_unique<QObject>();
    std::atomic<bool> release{false};
    bool answered = false;
    jobs.run(
        receiver.get(), QString(),
        [&release](const JobTicket &) {
          while (!release.load()) QThread::msleep(1);
          return 1;
        },
        [&](int) { answered = true; });
    receiver.reset();
    release = true;
    QTRY_VERIFY(!jobs.isBusy());
    QCoreApplication::processEvents();
    QVERIFY(!answered);
  }

  void aThrowingJobDoesNotStopTheThread() {
    BackgroundJobs jobs(QStringLiteral("test-jobs"));
    QObject receiver;
    bool first = false;
    int second = 0;
    jobs.run(
        &receiver, QString(), [](const JobTicket &) -> int { throw std::runtime_error("boom"); },
        [&](int) { first = true; });
    jobs.run(&receiver, QString(), [](const JobTicket &) { return 2; }, [&](int v) { second = v; });
    QTRY_COMPARE(second, 2);
    QVERIFY(!first);
  }

  // A service tells the window its work ended with the last answer, and the window then asks
  // isBusy(): the job must have stopped counting by then (once it did not, and a window waiting
  // to settle waited for a signal that had already gone by).
  void theLastAnswerFindsTheJobsIdle() {
    BackgroundJobs jobs(QStringLiteral("test-jobs"));
    QObject receiver;
    int answers = 0, busyAtAnswer = 0;
    for (int i = 0; i < 500; ++i) {
      QEventLoop loop;
      jobs.run(&receiver, QStringLiteral("export"), [](const JobTicket &) { return 1; }, [&](int) {
        ++answers;
        if (jobs.isBusy()) ++busyAtAnswer;
        loop.quit();
      });
      QTimer::singleShot(10000, &loop, &QEventLoop::quit);
      loop.exec();
      QCOMPARE(answers, i + 1);
    }
    QCOMPARE(busyAtAnswer, 0);
  }

  void destructionRunsJobsOfNoKindAndDropsTheRest() {
    auto ran = std::make_shared<std::atomic<int>>(0);
    auto kinded = std::make_shared<std::atomic<int>>(0);
    {
      BackgroundJobs jobs(QStringLiteral("test-jobs"));
      QObject receiver;
      std::atomic<bool> release{false};
      jobs.post([&release] {
        while (!release.load()) QThread::msleep(1);
      });
      for (int i = 0; i < 3; ++i) {
        jobs.post([ran] { ++*ran; });
        jobs.run(&receiver, QStringLiteral("profile"), [kinded](const JobTicket &) { return ++*kinded; }, [](int) {});
      }
      release = true;
    }  // waits for the thread
    QCOMPARE(ran->load(), 3);
    QCOMPARE(kinded->load(), 0);
  }
};

QTEST_MAIN(TestBackgroundJobs)
#include "tst_background_jobs.moc"
