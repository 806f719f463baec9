// Fits y = 3x + 1 with autograd and Adam on LibTorch's CPU half, then says which LibTorch
// libraries the process loaded: libtorch_cpu.so, and never libtorch_cuda.so.
#include <fstream>
#include <iostream>
#include <string>

#include <torch/torch.h>

int main() {
  torch::manual_seed(0);
  const torch::Tensor x = torch::linspace(-1, 1, 64).unsqueeze(1);
  const torch::Tensor y = 3 * x + 1;
  torch::nn::Linear line(1, 1);
  torch::optim::Adam adam(line->parameters(), torch::optim::AdamOptions(0.1));
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    adam.zero_grad();
    const torch::Tensor loss = torch::mse_loss(line(x), y);
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  std::cout << "loss " << first << " -> " << last << ", w " << line->weight.item<double>() << ", b "
            << line->bias.item<double>() << "\n";
  std::ifstream maps("/proc/self/maps");
  bool cpu = false, cuda = false;
  for (std::string line_text; std::getline(maps, line_text);) {
    cpu = cpu || line_text.find("/libtorch_cpu.so") != std::string::npos;
    cuda = cuda || line_text.find("/libtorch_cuda.so") != std::string::npos;
  }
  std::cout << "libtorch_cpu.so " << (cpu ? "loaded" : "not loaded") << ", libtorch_cuda.so "
            << (cuda ? "loaded" : "not loaded") << "\n";
  return last < 1e-4 && cpu && !cuda ? 0 : 1;
}
