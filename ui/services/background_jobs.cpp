#include "ui/services/background_jobs.h"

namespace kwb::ui {

BackgroundJobs::BackgroundJobs(const QString &name, QObject *parent) : QObject(parent) {
  thread_.setObjectName(name);
  context_ = new QObject;
  context_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, context_, &QObject::deleteLater);
  thread_.start();
}

BackgroundJobs::~BackgroundJobs() {
  all_->store(true);
  // Behind everything queued: cancelled jobs return at once, post()ed ones still run.
  QMetaObject::invokeMethod(context_, [] { QThread::currentThread()->quit(); }, Qt::QueuedConnection);
  thread_.wait();
}

JobTicket BackgroundJobs::begin(const QString &kind) {
  if (kind.isEmpty()) return JobTicket();
  JobTicket ticket(all_);
  if (const auto it = newest_.constFind(kind); it != newest_.constEnd()) it->cancel();
  newest_.insert(kind, ticket);
  return ticket;
}

void BackgroundJobs::post(std::function<void()> job) {
  enqueue([job = std::move(job)]() -> std::function<void()> {
    job();
    return {};
  });
}

void BackgroundJobs::enqueue(std::function<std::function<void()>()> job) {
  pending_->fetch_add(1);
  // Delivered through this object, alive while its thread runs (the destructor waits for it).
  QMetaObject::invokeMethod(
      context_,
      [this, pending = pending_, job = std::move(job)] {
        std::function<void()> answer;
        try {
          answer = job();
        } catch (...) {
          // An exception must not leave the thread's event loop; a job reports its own problems.
        }
        pending->fetch_sub(1);  // before the answer is queued: it finds the jobs idle
        if (answer) QMetaObject::invokeMethod(this, std::move(answer), Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

void BackgroundJobs::cancel(const QString &kind) {
  if (const auto it = newest_.constFind(kind); it != newest_.constEnd()) it->cancel();
}

}  // namespace kwb::ui
