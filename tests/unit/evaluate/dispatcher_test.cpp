#include "kopt/evaluate/dispatcher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

namespace kopt::evaluate {
namespace {

using namespace std::chrono_literals;

// What a run did: each task's workers in order, and the tasks given up with why.
struct Log {
  std::mutex m;
  std::map<std::size_t, std::vector<std::size_t>> ran_on;
  std::map<std::size_t, std::string> given_up;
  void ran(std::size_t t, std::size_t w) {
    std::lock_guard l(m);
    ran_on[t].push_back(w);
  }
  Dispatcher::GiveUp give_up() {
    return [this](std::size_t t, const std::string& why) {
      std::lock_guard l(m);
      given_up[t] = why;
    };
  }
};

TEST(Dispatcher, EveryTaskOnceAndEveryWorkerBusy) {
  Dispatcher d(3);
  Log log;
  std::atomic<int> running{0}, most{0};
  d.run(
      30,
      [&](std::size_t t, std::size_t w) {
        int now = ++running;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        std::this_thread::sleep_for(2ms);
        --running;
        log.ran(t, w);
        return DispatchOutcome{};
      },
      log.give_up());
  ASSERT_EQ(log.ran_on.size(), 30u);
  for (const auto& [t, ws] : log.ran_on) EXPECT_EQ(ws.size(), 1u) << "task " << t;
  EXPECT_TRUE(log.given_up.empty());
  EXPECT_EQ(most.load(), 3);  // one task per worker at a time, all three at once
  EXPECT_EQ(d.live(), 3u);
}

TEST(Dispatcher, ALostWorkersTaskIsRetriedOnceElsewhereAndTheWorkerRetired) {
  Dispatcher d(2);
  Log log;
  d.run(
      10,
      [&](std::size_t t, std::size_t w) {
        log.ran(t, w);
        if (w == 1) return DispatchOutcome{true, "node 1 died"};  // gone before its first task
        std::this_thread::sleep_for(1ms);
        return DispatchOutcome{};
      },
      log.give_up());
  EXPECT_TRUE(log.given_up.empty());
  EXPECT_FALSE(d.is_live(1));
  EXPECT_EQ(d.live_workers(), std::vector<std::size_t>{0});
  std::size_t retried = 0;
  for (const auto& [t, ws] : log.ran_on) {
    EXPECT_EQ(ws.back(), 0u) << "task " << t << " ends on the live worker";
    if (ws.size() == 2) {
      ++retried;
      EXPECT_EQ(ws.front(), 1u);
    }
  }
  EXPECT_EQ(log.ran_on.size(), 10u);
  EXPECT_EQ(retried, 1u);  // the worker is retired after its first loss
  EXPECT_EQ(log.ran_on.size(), 10u);
  ASSERT_EQ(d.notes().size(), 1u);
  EXPECT_NE(d.notes()[0].find("worker 1 lost: node 1 died"), std::string::npos);

  // The next run uses only the live worker.
  Log next;
  d.run(
      4,
      [&](std::size_t t, std::size_t w) {
        next.ran(t, w);
        return DispatchOutcome{};
      },
      next.give_up());
  for (const auto& [t, ws] : next.ran_on) EXPECT_EQ(ws, std::vector<std::size_t>{0});
}

TEST(Dispatcher, ATaskLostTwiceIsGivenUpWithBothReasons) {
  Dispatcher d(3);
  Log log;
  d.run(
      1,
      [&](std::size_t t, std::size_t w) {
        log.ran(t, w);
        return DispatchOutcome{true, "gone " + std::to_string(w)};
      },
      log.give_up());
  ASSERT_EQ(log.ran_on[0].size(), 2u);  // tried on two workers, not three
  ASSERT_EQ(log.given_up.count(0), 1u);
  EXPECT_NE(log.given_up[0].find("lost twice"), std::string::npos) << log.given_up[0];
  EXPECT_EQ(d.live(), 1u);
}

TEST(Dispatcher, WithNoWorkerLeftTheRestIsGivenUp) {
  Dispatcher d(1);
  Log log;
  d.run(
      5,
      [&](std::size_t t, std::size_t w) {
        log.ran(t, w);
        return DispatchOutcome{t == 2, "the GPU fell off the bus"};
      },
      log.give_up());
  EXPECT_EQ(log.ran_on.size(), 3u);  // 0, 1, then 2 lost the only worker
  EXPECT_EQ(log.given_up.size(), 3u);
  for (std::size_t t : {2u, 3u, 4u}) EXPECT_EQ(log.given_up.count(t), 1u) << t;
  EXPECT_NE(log.given_up[2].find("the GPU fell off the bus"), std::string::npos);
  EXPECT_NE(log.given_up[4].find("no live worker"), std::string::npos);
  EXPECT_EQ(d.live(), 0u);
  Log after;
  d.run(
      2,
      [&](std::size_t t, std::size_t w) {
        after.ran(t, w);
        return DispatchOutcome{};
      },
      after.give_up());
  EXPECT_TRUE(after.ran_on.empty());
  EXPECT_EQ(after.given_up.size(), 2u);
}

}  // namespace
}  // namespace kopt::evaluate
