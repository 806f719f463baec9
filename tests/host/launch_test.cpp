// Where the ranks of a run come from (the command line, torchrun's environment or SLURM's),
// and how the plan lays them out (plan/launch_layout.hpp).
#include "cli/launch_options.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "plan/launch_layout.hpp"

namespace mlhost {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(Launch, NoOptionsNoEnvironmentIsOneProcess) {
  const Launch l = resolve_launch(CliOptions{}, FakeEnv{}.lookup());
  EXPECT_FALSE(l.distributed());
  EXPECT_FALSE(l.external());
  EXPECT_EQ(l.world_size, 1);
  EXPECT_EQ(l.workers_here, 1);
}

TEST(Launch, NprocPerNodeStartsThatManyRanksOnAFreeLoopbackPort) {
  CliOptions o;
  o.nproc_per_node = 3;
  const Launch l = resolve_launch(o, FakeEnv{}.lookup());
  EXPECT_EQ(l.world_size, 3);
  EXPECT_EQ(l.workers_here, 3);
  EXPECT_EQ(l.local_processes, 3);
  EXPECT_EQ(l.first_rank, 0);
  EXPECT_EQ(l.master_addr, "127.0.0.1");
  EXPECT_GT(l.master_port, 0);
  EXPECT_FALSE(l.external());
}

TEST(Launch, SeveralNodesNumberTheirRanksByNodeRank) {
  CliOptions o;
  o.nproc_per_node = 4;
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.1.2.3";
  const Launch l = resolve_launch(o, FakeEnv{}.lookup());
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.first_rank, 4);
  EXPECT_EQ(l.first_local_rank, 0);
  EXPECT_EQ(l.master_addr, "10.1.2.3");
  EXPECT_EQ(l.master_port, 29500);
}

TEST(Launch, TorchrunEnvironmentMakesThisProcessOneRank) {
  FakeEnv env{{{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
               {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29400"}}};
  const Launch l = resolve_launch(CliOptions{}, env.lookup());
  EXPECT_TRUE(l.external());
  EXPECT_EQ(l.source, "torchrun environment");
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.first_rank, 5);
  EXPECT_EQ(l.first_local_rank, 1);
  EXPECT_EQ(l.local_processes, 4);
  EXPECT_EQ(l.nnodes, 2);
  EXPECT_EQ(l.workers_here, 1);
  EXPECT_EQ(l.master_addr, "node0");
  EXPECT_EQ(l.master_port, 29400);
}

TEST(Launch, SlurmEnvironmentUsesTheJobsFirstNode) {
  FakeEnv env{{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"}, {"SLURM_NNODES", "2"},
               {"SLURM_JOB_NODELIST", "gpu[07-08],cpu1"}}};
  const Launch l = resolve_launch(CliOptions{}, env.lookup());
  EXPECT_EQ(l.source, "SLURM environment");
  EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(l.first_rank, 3);
  EXPECT_EQ(l.first_local_rank, 1);
  EXPECT_EQ(l.local_processes, 2);
  EXPECT_EQ(l.master_addr, "gpu07");
  EXPECT_EQ(l.master_port, 29500);
  // MASTER_ADDR and MASTER_PORT, when the job script sets them, win.
  env.vars["MASTER_ADDR"] = "login1";
  env.vars["MASTER_PORT"] = "4242";
  const Launch m = resolve_launch(CliOptions{}, env.lookup());
  EXPECT_EQ(m.master_addr, "login1");
  EXPECT_EQ(m.master_port, 4242);
}

TEST(Launch, ASingleTaskSlurmJobIsOneProcess) {
  FakeEnv env{{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_NODELIST", "n1"}}};
  EXPECT_FALSE(resolve_launch(CliOptions{}, env.lookup()).distributed());
}

TEST(Launch, SlurmNodeLists) {
  EXPECT_EQ(first_slurm_host("node1"), "node1");
  EXPECT_EQ(first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(first_slurm_host("node[07-09,12],gpu1"), "node07");
  EXPECT_EQ(first_slurm_host("rack[2,4]-n[1-3]"), "rack2-n[1-3]");
  EXPECT_EQ(first_slurm_host("node[]"), "");
  EXPECT_EQ(first_slurm_host("node[1"), "");
}

TEST(Launch, MalformedEnvironmentNamesTheVariable) {
  auto error_of = [](std::map<std::string, std::string> vars, const CliOptions& o = {}) {
    FakeEnv env{std::move(vars)};
    try {
      resolve_launch(o, env.lookup());
    } catch (const CliError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of({{"RANK", "0"}}).find("RANK and WORLD_SIZE"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}).find("RANK='x'"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}).find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "99999"}})
                .find("MASTER_PORT='99999'"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).find("SLURM_JOB_NODELIST"), std::string::npos);
  CliOptions o;
  o.nproc_per_node = 2;
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, o).find("cannot be used together"), std::string::npos);
}

Device device(const std::string& kind, int index, int32_t device_class, uint32_t limitations = 0) {
  Device d;
  d.plugin = kind;
  d.kind = kind;
  d.index = index;
  d.device_class = device_class;
  d.available = true;
  d.limitations = limitations;
  d.torch_device = kind + ":" + std::to_string(index);
  return d;
}

TEST(Launch, RanksShareTheCpuAndTakeOneGpuEach) {
  CliOptions o;
  o.nproc_per_node = 2;
  const Launch l = resolve_launch(o, FakeEnv{}.lookup());
  const Device cpu = device("cpu", 0, MLH_DEVICE_CLASS_CPU);
  Ranking ranking;
  ranking.devices = {{cpu, true, 1, ""}};
  const auto cpus = devices_for_ranks(l, cpu, ranking);
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[1].id(), "cpu:0");

  const Device g0 = device("cuda", 0, MLH_DEVICE_CLASS_DISCRETE_GPU), g1 = device("cuda", 1, MLH_DEVICE_CLASS_DISCRETE_GPU);
  ranking.devices = {{g1, true, 1, ""}, {g0, false, 2, ""}, {cpu, false, 3, ""}};
  const auto gpus = devices_for_ranks(l, g1, ranking);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].id(), "cuda:0");
  EXPECT_EQ(gpus[1].id(), "cuda:1");

  ranking.devices = {{g0, true, 1, ""}, {cpu, false, 2, ""}};
  EXPECT_THROW(devices_for_ranks(l, g0, ranking), std::runtime_error);
  const Device mps = device("mps", 0, MLH_DEVICE_CLASS_UNIFIED_GPU, MLH_LIMIT_NO_DISTRIBUTED);
  ranking.devices = {{mps, true, 1, ""}};
  try {
    devices_for_ranks(l, mps, ranking);
    ADD_FAILURE() << "MPS was accepted for a distributed run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot take part in distributed training"), std::string::npos) << e.what();
  }
}

TEST(Launch, PlanGetsTheLayoutAndSplitsTheCores) {
  CliOptions o;
  o.nproc_per_node = 2;
  const Launch l = resolve_launch(o, FakeEnv{}.lookup());
  auto laid_out = [&](const Device& d) {
    PlanWriter plan;
    plan.set(mlh::PlanField::kBatchSize, 64, {SourceKind::kRule, "rule"});
    plan.set(mlh::PlanField::kThreads, {{"intra_op", 8}, {"inter_op", 1}}, {SourceKind::kDevice, "device"});
    plan_launch_layout(plan, l, d);
    return plan.view();
  };
  const nlohmann::json plan = laid_out(device("cpu", 0, MLH_DEVICE_CLASS_CPU));
  EXPECT_EQ(plan["distributed"]["world_size"], 2);
  EXPECT_EQ(plan["distributed"]["global_batch_size"], 128);
  EXPECT_EQ(plan["distributed"]["backend"], "gloo");
  EXPECT_EQ(plan["threads"]["intra_op"], 4);
  EXPECT_EQ(plan["sources"]["threads"], "device; divided among 2 ranks on this machine");
  EXPECT_EQ(plan["source_kinds"]["threads"], "device");
  EXPECT_EQ(plan["source_kinds"]["distributed"], "launch");

  const nlohmann::json gpu_plan = laid_out(device("cuda", 0, MLH_DEVICE_CLASS_DISCRETE_GPU));
  EXPECT_EQ(gpu_plan["distributed"]["backend"], "nccl");
  EXPECT_EQ(gpu_plan["threads"]["intra_op"], 8);
}

TEST(Launch, RanksSharingAMachineAreNotBoundToTheSameCores) {
  auto bind_after_layout = [](int nproc, const nlohmann::json& bind) {
    CliOptions o;
    o.nproc_per_node = nproc;
    PlanWriter plan;
    plan.set(mlh::PlanField::kThreads, {{"intra_op", 2}, {"inter_op", 1}}, {SourceKind::kDevice, "device"});
    plan.set(mlh::PlanField::kOmpProcBind, bind, {SourceKind::kSettingsFile, "settings file mlhost.ini:3"});
    plan_launch_layout(plan, resolve_launch(o, FakeEnv{}.lookup()), device("cpu", 0, MLH_DEVICE_CLASS_CPU));
    return plan.view();
  };
  const nlohmann::json two = bind_after_layout(2, "close");
  EXPECT_TRUE(two["omp_proc_bind"].is_null());
  EXPECT_EQ(two["sources"]["omp_proc_bind"],
            "settings file mlhost.ini:3; close not applied: the 2 ranks on this machine would all be bound to its "
            "first cores");
  ASSERT_EQ(two["warnings"].size(), 1u);
  EXPECT_NE(two["warnings"][0].get<std::string>().find("omp_proc_bind = \"close\" (settings file mlhost.ini:3)"),
            std::string::npos)
      << two["warnings"];
  // One process keeps its binding; "false" binds nothing to begin with.
  EXPECT_EQ(bind_after_layout(1, "close")["omp_proc_bind"], "close");
  const nlohmann::json unbound = bind_after_layout(2, "false");
  EXPECT_EQ(unbound["omp_proc_bind"], "false");
  EXPECT_FALSE(unbound.contains("warnings"));
}

}  // namespace
}  // namespace mlhost
