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
  pending_->fetch_add(1);
  QMetaObject::invokeMethod(
      context_,
      [pending = pending_, job = std::move(job)] {
        try {
          job();
        } catch (...) {
          // An exception must not leave the thread's event loop; a job reports its own problems.
        }
        pending->fetch_sub(1);
      },
      Qt::QueuedConnection);
}

void BackgroundJobs::cancel(const QString &kind) {
  if (const auto it = newest_.constFind(kind); it != newest_.constEnd()) it->cancel();
}

}  // namespace kwb::ui
