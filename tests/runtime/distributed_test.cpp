// mlh::rt::Distributed with two ranks in one process (one thread each, a real TCPStore and
// Gloo group over loopback): broadcast, gradient averaging across several buckets with a
// frozen and an unused parameter, the scalar collectives, the agreement check, and the
// single-process and MPS cases.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <thread>

#include <torch/nn/modules/linear.h>
#include <torch/nn/module.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/distributed.hpp>

#include "free_port.hpp"

namespace {

using mlh::rt::Distributed;
using mlh::rt::DistributedSettings;

int free_port() { return free_loopback_port_for_test(); }

// Runs body(rank, dist) on two ranks at once; rethrows the first failure.
void two_ranks(const std::function<void(int, Distributed&)>& body, int timeout_s = 30) {
  const int port = free_port();
  std::exception_ptr failure[2];
  std::thread threads[2];
  for (int rank = 0; rank < 2; ++rank)
    threads[rank] = std::thread([&, rank] {
      try {
        DistributedSettings s;
        s.rank = rank;
        s.world_size = 2;
        s.master_port = port;
        s.timeout = std::chrono::seconds(timeout_s);
        Distributed dist(s, c10::Device(c10::DeviceType::CPU));
        body(rank, dist);
      } catch (...) {
        failure[rank] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& f : failure)
    if (f) std::rethrow_exception(f);
}

// Parameters of very different sizes, one frozen and one that no loss uses.
struct Net : torch::nn::Module {
  Net() {
    big = register_module("big", torch::nn::Linear(64, 32));
    small = register_module("small", torch::nn::Linear(32, 1));
    frozen = register_parameter("frozen", at::ones({3}), /*requires_grad=*/false);
    unused = register_parameter("unused", at::zeros({5}));
    register_buffer("steps", at::zeros({1}));
  }
  at::Tensor forward(const at::Tensor& x) { return small->forward(at::tanh(big->forward(x))); }
  torch::nn::Linear big{nullptr}, small{nullptr};
  at::Tensor frozen, unused;
};

std::vector<at::Tensor> grads_of(Net& net) {
  std::vector<at::Tensor> g;
  for (const auto& p : net.parameters())
    if (p.requires_grad() && p.grad().defined()) g.push_back(p.grad().clone());
  return g;
}

TEST(Distributed, OneProcessIsANoOp) {
  Distributed dist;
  EXPECT_FALSE(dist.enabled());
  EXPECT_EQ(dist.world_size(), 1);
  EXPECT_EQ(dist.backend(), "none");
  Net net;
  const at::Tensor x = at::randn({4, 64});
  net.forward(x).sum().backward();
  const auto before = grads_of(net);
  dist.average_gradients(net.parameters());
  const auto after = grads_of(net);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(before[i], after[i]));
  EXPECT_EQ(dist.mean(3.5), 3.5);
  EXPECT_TRUE(dist.parameters_agree(net));
  EXPECT_EQ(mlh::rt::seed_for_rank(42, 0), 42u);
  EXPECT_NE(mlh::rt::seed_for_rank(42, 1), 42u);
}

// The group's backend is the plan's (the host writes distributed.backend from the device
// traits it shares with the runtime), else the device's own; what no backend carries is refused.
TEST(Distributed, TheCommunicationBackendIsThePlans) {
  using mlh::rt::communication_backend;
  EXPECT_EQ(communication_backend("", "cpu"), "gloo");
  EXPECT_EQ(communication_backend("", "cuda:1"), "nccl");
  EXPECT_EQ(communication_backend("gloo", "cuda:0"), "gloo") << "the plan decides, not the device";
  EXPECT_EQ(communication_backend("", "xla:0"), "gloo") << "a type the traits do not know: as the host plans it";
  try {
    communication_backend("gloo", "mps");
    ADD_FAILURE() << "MPS tensors are carried by no backend";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("neither Gloo nor NCCL carries MPS tensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(communication_backend("mpi", "cpu"), mlh::Error);
}

TEST(Distributed, BroadcastGivesEveryRankRank0sWeights) {
  at::Tensor weights[2];
  two_ranks([&](int rank, Distributed& dist) {
    EXPECT_EQ(dist.backend(), "gloo");
    torch::manual_seed(100 + rank);  // different initial weights per rank
    Net net;
    EXPECT_FALSE(dist.parameters_agree(net));
    dist.broadcast_module(net);
    EXPECT_TRUE(dist.parameters_agree(net));
    weights[rank] = net.big->weight.detach().clone();
  });
  EXPECT_TRUE(at::equal(weights[0], weights[1]));
}

TEST(Distributed, AveragedGradientsEqualTheGradientOfTheGlobalBatch) {
  // Reference: one process, the mean loss over both halves of the batch.
  torch::manual_seed(7);
  Net reference;
  const at::Tensor x = at::randn({8, 64}), y = at::randn({8, 1});
  (reference.forward(x) - y).pow(2).mean().backward();
  const auto expected = grads_of(reference);

  std::vector<at::Tensor> got[2];
  bool unused_defined[2] = {false, false};
  two_ranks([&](int rank, Distributed& dist) {
    torch::manual_seed(1000 + rank);
    Net net;
    // The reference's weights on rank 0, then broadcast.
    if (rank == 0) {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < net.parameters().size(); ++i) net.parameters()[i].copy_(reference.parameters()[i]);
    }
    dist.broadcast_module(net);
    const at::Tensor xs = x.narrow(0, rank * 4, 4), ys = y.narrow(0, rank * 4, 4);
    (net.forward(xs) - ys).pow(2).mean().backward();
    // 256-byte buckets: the 8 KiB weight gets its own, the rest share a few.
    dist.average_gradients(net.parameters(), 256);
    got[rank] = grads_of(net);
    unused_defined[rank] = net.unused.grad().defined();
    EXPECT_FALSE(net.frozen.grad().defined());
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(unused_defined[rank]) << "an unused parameter gets a (zero) gradient on every rank";
    // grads_of(reference) has no entry for the unused parameter; the ranks' lists do (zeros).
    ASSERT_EQ(got[rank].size(), expected.size() + 1);
    size_t j = 0;
    for (size_t i = 0; i < got[rank].size(); ++i) {
      if (got[rank][i].numel() == 5) {
        EXPECT_EQ(got[rank][i].abs().sum().item<float>(), 0.0f);
        continue;
      }
      EXPECT_TRUE(at::allclose(got[rank][i], expected[j], 1e-5, 1e-6)) << "parameter " << i << " on rank " << rank;
      ++j;
    }
  }
}

TEST(Distributed, ScalarCollectivesAndGather) {
  two_ranks([&](int rank, Distributed& dist) {
    EXPECT_DOUBLE_EQ(dist.mean(rank == 0 ? 1.0 : 3.0), 2.0);
    EXPECT_TRUE(dist.any(rank == 1));
    EXPECT_FALSE(dist.any(false));
    at::Tensor t = at::full({3}, static_cast<float>(rank + 1));
    dist.all_reduce_sum(t);
    EXPECT_TRUE(at::equal(t, at::full({3}, 3.0f)));
    const auto gathered = dist.all_gather(at::full({2}, static_cast<int64_t>(rank)));
    ASSERT_EQ(gathered.size(), 2u);
    EXPECT_EQ(gathered[1][0].item<int64_t>(), 1);
    dist.barrier();
  });
}

TEST(Distributed, APeerThatLeavesFailsTheOthersCollectiveNamingTheRank) {
  std::string error;
  try {
    two_ranks(
        [&](int rank, Distributed& dist) {
          dist.barrier();
          if (rank == 1) return;  // leaves: its group is destroyed, its sockets close
          for (int i = 0; i < 3; ++i) dist.mean(1.0);
        },
        5);
  } catch (const mlh::Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("distributed rank 0 of 2"), std::string::npos) << error;
}

TEST(Distributed, MpsIsRefusedBeforeAnyRendezvous) {
  DistributedSettings s;
  s.world_size = 2;
  s.master_port = free_port();
  try {
    Distributed dist(s, c10::Device(c10::DeviceType::MPS));
    ADD_FAILURE() << "MPS was accepted";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("MPS"), std::string::npos) << e.what();
  }
}

TEST(Distributed, NoPeerMeansARendezvousTimeoutNamingTheAddress) {
  DistributedSettings s;
  s.rank = 1;  // a client, whose server (rank 0) never comes
  s.world_size = 2;
  s.master_port = free_port();
  s.timeout = std::chrono::seconds(2);
  try {
    Distributed dist(s, c10::Device(c10::DeviceType::CPU));
    ADD_FAILURE() << "joined a group without its rank 0";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(s.master_port)), std::string::npos) << e.what();
  }
}

}  // namespace
