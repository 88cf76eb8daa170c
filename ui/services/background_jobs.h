#pragma once
// One service's background work: a thread of its own that runs jobs in the order they were
// posted, so state that must stay on one thread (a SQLite connection, a CUDA-free worker client)
// lives there; answers come back to the GUI thread through the event loop. The same shape for
// every service (evaluation, profiling, tuning, the workspace), after hotspot's job tracker:
//
//   jobs_.run(this, QStringLiteral("profile"),
//             [request](const JobTicket &ticket) { return profile(request, ticket); },
//             [this](ProfileRow row) { emit finished(row); });
//
// Newest request wins: a job posted under a kind supersedes the older ones of that kind, whose
// answers are then dropped (and whose tickets say so, for work that can stop early). cancel(kind)
// does the same without a new job, and destroying the BackgroundJobs cancels every job of a kind.
// A job of no kind (an empty kind) is never cancelled: it always runs, in order, even when the
// BackgroundJobs is being destroyed (a workspace's writes). An answer for a receiver that is gone
// is dropped.
#include <atomic>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <QHash>
#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

namespace kwb::ui {

// Handed to a job: whether its answer is still wanted. Cheap to copy; safe from any thread.
class JobTicket {
 public:
  JobTicket() = default;
  bool cancelled() const { return own_->load() || (all_ && all_->load()); }
  void cancel() const { own_->store(true); }

 private:
  friend class BackgroundJobs;
  using Flag = std::shared_ptr<std::atomic<bool>>;
  explicit JobTicket(Flag all) : all_(std::move(all)) {}
  Flag own_ = std::make_shared<std::atomic<bool>>(false);
  Flag all_;  // the BackgroundJobs' own: set when it is destroyed
};

class BackgroundJobs : public QObject {
  Q_OBJECT

 public:
  // name: the thread's name, as a debugger shows it.
  explicit BackgroundJobs(const QString &name, QObject *parent = nullptr);
  // Cancels every job of a kind, lets the one running finish (it sees its ticket cancelled), runs
  // the jobs of no kind and those given to post() (a service's last writes), and waits for the
  // thread to end.
  ~BackgroundJobs() override;

  // Runs work(ticket) on the jobs' thread after everything posted before it; its result goes to
  // done(result) on this object's thread, which must be the receiver's, unless by then the ticket
  // was cancelled (a newer job of the same kind, cancel(kind), or destruction) or the receiver is
  // gone. Work that throws has no answer (the exception is dropped: catch in work to report it).
  // Returns the job's ticket.
  template <typename Work, typename Done>
  JobTicket run(QObject *receiver, const QString &kind, Work work, Done done) {
    using Result = std::decay_t<std::invoke_result_t<Work &, const JobTicket &>>;
    const JobTicket ticket = begin(kind);
    QPointer<QObject> guard(receiver);
    // std::function needs a copyable callable: the callables are shared, not copied.
    auto shared = std::make_shared<std::pair<Work, Done>>(std::move(work), std::move(done));
    enqueue([ticket, guard, shared]() -> std::function<void()> {
      if (ticket.cancelled()) return {};
      auto result = std::make_shared<Result>(shared->first(ticket));
      // Checked on the receiver's thread, which is this object's: a receiver destroyed meanwhile
      // is never touched.
      return [ticket, guard, shared, result] {
        if (!ticket.cancelled() && guard) shared->second(std::move(*result));
      };
    });
    return ticket;
  }

  // Runs work on the jobs' thread, with no answer and no cancelling: for writes that must happen.
  void post(std::function<void()> work);

  // The jobs of that kind (queued or running) are no longer wanted.
  void cancel(const QString &kind);
  // Whether the thread is running a job or has jobs queued. False by the time a job's answer
  // arrives, if it was the last one: whoever the answer tells may ask whether all is done.
  bool isBusy() const { return pending_->load() > 0; }

 private:
  JobTicket begin(const QString &kind);
  // Runs job on the jobs' thread; what it returns (if anything) runs on this object's thread
  // after the job has stopped counting as pending.
  void enqueue(std::function<std::function<void()>()> job);

  QThread thread_;
  QObject *context_ = nullptr;  // lives on thread_; jobs run in its event loop
  QHash<QString, JobTicket> newest_;
  JobTicket::Flag all_ = std::make_shared<std::atomic<bool>>(false);  // set on destruction
  std::shared_ptr<std::atomic<int>> pending_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace kwb::ui
