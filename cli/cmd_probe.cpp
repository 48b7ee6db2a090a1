// fuseplan probe [--threads N] [-o FILE]: measure this machine and write a device JSON,
// by default ./host-cpu.probed.json. The shipped configs/devices/host-cpu.json
// is replaced only when -o names it.
#include <iostream>

#include "cli/common.h"
#include "probe/probe.h"

namespace fuseplan::cli {

/// Where `fuseplan probe` writes without -o: the current directory, never a
/// shipped configs/devices file.
constexpr const char* kProbeDefaultOutput = "host-cpu.probed.json";

void add_probe(CLI::App& app) {
  auto out = std::make_shared<std::string>(kProbeDefaultOutput);
  auto* cmd = app.add_subcommand("probe", "measure this CPU (triad bandwidth per cache level, write-allocate stores, FP32, dispatch, the contraction library per contraction class, transcendental ops) in < 30 s");
  cmd->add_option("-o,--output", *out,
                  "device JSON to write (use it as --device FILE); only -o SOURCE_TREE/configs/devices/host-cpu.json "
                  "replaces the shipped host-cpu device")
      ->capture_default_str()
      ->check(file_name());
  auto threads = std::make_shared<int>(0);
  cmd->add_option("--threads", *threads,
                  "threads the kernels will run on (OMP_NUM_THREADS; 0 = every core): sets launch_us, the pool's "
                  "fork-join, or with 1 the timed empty call, and the contraction throughput's threads; the rest is "
                  "measured on every core")
      ->capture_default_str()
      ->check(integer_in(0, 4096));
  cmd->callback([out, threads] {
    // More threads than cores would time the scheduler, not a fork-join.
    if (const int cores = host_info().cores; *threads > cores)
      throw Error("--threads " + std::to_string(*threads) + ": this machine has " + std::to_string(cores) +
                  " cores (use 1 to " + std::to_string(cores) + ", or 0 for all of them)");
    check_output_file(*out);  // probing takes seconds: a bad -o fails first
    ProbeResult r = run_probe(&std::cerr, *threads);
    write_device_file(r.device, *out);
    const DeviceSpec& d = r.device;
    std::cout << "cores " << d.cpu->cores << ", FP32 " << fmt(d.fp32_TFLOPs * 1e3, 1) << " GFLOP/s, dispatch "
              << fmt(d.launch_us, 2) << " us (timed empty call " << fmt(r.timed_call_us, 2) << " us)\n";
    for (const auto& c : d.cpu->caches)
      std::cout << "  " << c.name << " " << fmt_bytes(c.bytes) << ": triad " << fmt(c.bw_GBps, 1) << " GB/s\n";
    std::cout << "DRAM triad " << fmt(r.triad_dram_GBps, 1) << " GB/s; independent STREAM-style "
              << fmt(r.independent_dram_GBps, 1) << " GB/s (" << fmt(r.agreement_pct, 1) << "% apart)\n";
    std::cout << "write-allocate (stores into flushed lines) " << fmt(d.cpu->write_allocate_bw_GBps, 1) << " GB/s\n";
    std::cout << "wrote " << *out << " in " << fmt(r.seconds, 1) << " s (use it with --device " << *out << ")\n";
  });
}

}  // namespace fuseplan::cli
