// write_torch_save: the file torch.load reads. Here it is read back by the warm start's own
// torch.save reader (a plain dict, every dtype and shape bit-exact, keys by name); that it holds
// no TorchScript type tags, which Python's weights_only torch.load refuses, is checked in its
// bytes (the archive stores data.pkl uncompressed). Python's torch.load itself reads it in
// TrmHost.TheReferenceEvaluatorScoresOurSavedPredictionsAsEvalDoes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include <ATen/ATen.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/torch_save_writer.hpp>
#include <mlh/runtime/warm_start.hpp>

#include "temp_dir.hpp"

namespace {

TEST(TorchSaveWriter, WritesADictOfTensorsThatReadsBackBitExact) {
  TempDir dir("torch-save-writer-");
  const std::string path = (dir / "preds.pt").string();
  const at::Tensor ints = at::arange(12, at::kInt).view({3, 4});
  const at::Tensor longs = at::arange(6, at::kLong).view({2, 3}).t();  // not contiguous
  const at::Tensor floats = at::randn({5});
  mlh::rt::write_torch_save(path, {{"inputs", ints}, {"preds", longs}, {"q_halt_logits", floats}});

  const mlh::rt::WeightsFile file = mlh::rt::read_weights_file(path);
  EXPECT_EQ(file.format, "torch.save state dict");
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_TRUE(at::equal(file.tensors.at("inputs"), ints));
  EXPECT_EQ(file.tensors.at("inputs").scalar_type(), at::kInt);
  EXPECT_TRUE(at::equal(file.tensors.at("preds"), longs));
  EXPECT_EQ(file.tensors.at("preds").scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(file.tensors.at("q_halt_logits"), floats));

  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("data.pkl"), std::string::npos);
  EXPECT_EQ(bytes.find("restore_type_tag"), std::string::npos) << "tagged containers: weights_only torch.load refuses them";
}

TEST(TorchSaveWriter, AnUnwritableFolderIsAnIoErrorNamingThePath) {
  try {
    mlh::rt::write_torch_save("/nonexistent-folder/preds.pt", {{"x", at::ones({1})}});
    FAIL() << "no error";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_IO);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/preds.pt"), std::string::npos) << e.what();
  }
}

}  // namespace
