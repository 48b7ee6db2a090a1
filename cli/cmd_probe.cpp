// fuseplan probe: measure this machine and write configs/devices/host-cpu.json.
#include <iostream>

#include "cli/common.h"
#include "profiling/probe.h"

namespace fuseplan::cli {

void add_probe(CLI::App& app) {
  auto out = std::make_shared<std::string>(data_dir() + "/configs/devices/host-cpu.json");
  auto* cmd = app.add_subcommand("probe", "measure this CPU (triad bandwidth per cache level, FP32, dispatch) in < 30 s");
  cmd->add_option("-o,--output", *out, "device JSON to write")->capture_default_str();
  cmd->callback([out] {
    ProbeResult r = run_probe(&std::cerr);
    write_device_file(r.device, *out);
    const DeviceSpec& d = r.device;
    std::cout << "cores " << d.sm_count << ", FP32 " << fmt(d.fp32_TFLOPs * 1e3, 1) << " GFLOP/s, dispatch "
              << fmt(d.launch_us, 2) << " us\n";
    for (const auto& c : d.caches)
      std::cout << "  " << c.name << " " << fmt_bytes(c.bytes) << ": triad " << fmt(c.bw_GBps, 1) << " GB/s\n";
    std::cout << "DRAM triad " << fmt(r.triad_dram_GBps, 1) << " GB/s; independent STREAM-style "
              << fmt(r.independent_dram_GBps, 1) << " GB/s (" << fmt(r.agreement_pct, 1) << "% apart)\n";
    std::cout << "wrote " << *out << " in " << fmt(r.seconds, 1) << " s\n";
  });
}

}  // namespace fuseplan::cli
