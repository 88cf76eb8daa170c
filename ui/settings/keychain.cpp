#include "ui/settings/keychain.h"

#include <qt6keychain/keychain.h>

namespace kwb::ui {

namespace {

QString serviceName() {
  return QLatin1String(Keychain::kService);
}

QString messageFor(const QKeychain::Job &job, const QString &provider) {
  switch (job.error()) {
    case QKeychain::EntryNotFound:
      return Keychain::tr("the desktop keychain holds no key for \"%1\"; enter it here and press Apply")
          .arg(provider);
    case QKeychain::AccessDeniedByUser:
    case QKeychain::AccessDenied:
      return Keychain::tr(
                 "the desktop keychain refused access to the key of \"%1\": %2; unlock the keychain "
                 "and try again")
          .arg(provider, job.errorString());
    default:
      break;
  }
  QString why = job.errorString();
  // QtKeychain says only "Unknown error" when there is no session bus to reach a keychain on.
  if (qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS"))
    why += Keychain::tr(" (no D-Bus session bus, so no secret service can be reached)");
  return Keychain::unavailableMessage(why);
}

// Jobs have no parent: a keychain answer can arrive after the settings page is gone (an unlock
// prompt), and the backend holds on to the job until then; it deletes itself when done. Its
// `finished` connection has the Keychain as context, so a late answer is simply dropped.
template <typename JobT>
JobT *startJob(const QString &provider) {
  auto *job = new JobT(serviceName(), nullptr);
  job->setAutoDelete(true);
  job->setInsecureFallback(false);  // never a plain-text file in place of a keychain
  job->setKey(provider);
  return job;
}

}  // namespace

Keychain::Keychain(QObject *parent) : QObject(parent) {}

QString Keychain::unavailableMessage(const QString &why) {
  return tr("the desktop keychain is not available: %1; keep the key in an environment variable and name it "
            "here instead")
      .arg(why);
}

void Keychain::readKey(const QString &provider) {
  auto *job = startJob<QKeychain::ReadPasswordJob>(provider);
  connect(job, &QKeychain::Job::finished, this, [this, provider](QKeychain::Job *done) {
    if (done->error() == QKeychain::NoError)
      emit keyRead(provider, static_cast<QKeychain::ReadPasswordJob *>(done)->textData());
    else
      emit failed(provider, QStringLiteral("read"), messageFor(*done, provider));
  });
  job->start();
}

void Keychain::writeKey(const QString &provider, const QString &key) {
  auto *job = startJob<QKeychain::WritePasswordJob>(provider);
  job->setTextData(key);
  connect(job, &QKeychain::Job::finished, this, [this, provider](QKeychain::Job *done) {
    if (done->error() == QKeychain::NoError)
      emit keyWritten(provider);
    else
      emit failed(provider, QStringLiteral("write"), messageFor(*done, provider));
  });
  job->start();
}

void Keychain::deleteKey(const QString &provider) {
  auto *job = startJob<QKeychain::DeletePasswordJob>(provider);
  connect(job, &QKeychain::Job::finished, this, [this, provider](QKeychain::Job *done) {
    if (done->error() == QKeychain::NoError || done->error() == QKeychain::EntryNotFound)
      emit keyDeleted(provider);
    else
      emit failed(provider, QStringLiteral("delete"), messageFor(*done, provider));
  });
  job->start();
}

}  // namespace kwb::ui
