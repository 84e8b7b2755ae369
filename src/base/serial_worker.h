#pragma once
// Runs the tasks given to it one after another, in the order given, on a thread of its own: the
// second stage of a two-stage pipeline. give() waits while `capacity` tasks wait to run;
// finish() waits for the last and rethrows the first exception a task threw (the tasks given
// after it are dropped). Destroyed unfinished (the first stage threw), it drops what waits and
// joins its thread.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace ddp {

class SerialWorker {
 public:
  explicit SerialWorker(std::size_t capacity) : capacity_(capacity), thread_([this] { run(); }) {}
  ~SerialWorker() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      tasks_.clear();
    }
    changed_.notify_all();
    thread_.join();
  }
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  void give(std::function<void()> task) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return tasks_.size() < capacity_ || error_; });
    if (!error_) tasks_.push_back(std::move(task));
    changed_.notify_all();
  }

  void finish() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return (tasks_.empty() && !running_) || error_; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return !tasks_.empty() || closed_; });
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = true;
      lock.unlock();
      changed_.notify_all();  // room for the next
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      running_ = false;
      if (error && !error_) {
        error_ = error;
        tasks_.clear();
      }
      changed_.notify_all();
    }
  }

  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  bool running_ = false;
  bool closed_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: it starts once the rest is made
};

}  // namespace ddp
