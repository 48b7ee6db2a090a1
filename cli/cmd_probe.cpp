// fuseplan probe [--threads N] [--quick] [-o FILE]: measure this machine.
// The probe of every core refreshes the per-machine cache `--device host-cpu`
// reads (probe/host_device.h) unless the machine was busy; -o FILE also
// writes it as a device JSON. The shipped configs/devices files are never
// touched unless -o names one.
#include <iostream>

#include "cli/common.h"
#include "probe/host_device.h"
#include "probe/probe.h"

namespace fuseplan::cli {

namespace {
struct ProbeArgs {
  std::string out;  // "" = the cache only
  int threads = 0;
  bool quick = false;
};

void run_probe_command(const ProbeArgs& a) {
  // More threads than cores would time the scheduler, not a fork-join.
  const int cores = host_info().cores;
  if (a.threads > cores)
    throw Error("--threads " + std::to_string(a.threads) + ": this machine has " + std::to_string(cores) +
                " cores (use 1 to " + std::to_string(cores) + ", or 0 for all of them)");
  // The cache holds the device --device host-cpu uses: every core.
  const bool host = a.threads == 0 || a.threads == cores;
  if (!host && a.out.empty())
    throw Error("--threads " + std::to_string(a.threads) + " measures a variant of this host that the cache does not "
                "hold (it holds the " + std::to_string(cores) + "-core device --device host-cpu uses): give -o FILE");
  if (!a.out.empty()) check_output_file(a.out);  // probing takes seconds: a bad -o fails first
  const ProbeOptions po{.threads = a.threads, .quick = a.quick};
  auto measure = [&] { return run_probe(&std::cerr, po); };
  ProbeResult r;
  std::string cache_line;
  if (host) {
    HostDeviceOptions o;
    o.refresh = true;
    o.prober = measure;
    o.log = &std::cerr;
    o.progress_line = false;  // run_probe logs each measurement
    try {
      HostDevice hd = host_device(o);
      r = std::move(*hd.probe);
      cache_line = hd.cached ? "cached in " + hd.cache_path + " (--device host-cpu reads it)"
                             : "not cached (" + (hd.verdict.reason.empty() ? "see the warning above" : hd.verdict.reason) + ")";
    } catch (const EnvironmentError& e) {
      if (a.out.empty()) throw;  // the cache was the only output
      warn(std::string(e.what()) + "; writing " + a.out + " only");
      r = measure();
      cache_line = "not cached";
    }
  } else {
    r = measure();
    const ProbeVerdict v = judge_probe(r, cores);
    if (v.loaded) warn("the machine was busy while probing (" + v.reason + "): run `fuseplan probe` again when it is quiet");
  }
  if (!a.out.empty()) write_device_file(r.device, a.out);
  const DeviceSpec& d = r.device;
  std::cout << "cores " << d.cpu->cores << ", FP32 " << fmt(d.fp32_TFLOPs * 1e3, 1) << " GFLOP/s, dispatch "
            << fmt(d.launch_us, 2) << " us (timed empty call " << fmt(r.timed_call_us, 2) << " us)\n";
  for (const auto& c : d.cpu->caches)
    std::cout << "  " << c.name << " " << fmt_bytes(c.bytes) << ": triad " << fmt(c.bw_GBps, 1) << " GB/s\n";
  std::cout << "DRAM triad " << fmt(r.triad_dram_GBps, 1) << " GB/s; independent STREAM-style "
            << fmt(r.independent_dram_GBps, 1) << " GB/s (" << fmt(r.agreement_pct, 1) << "% apart)\n";
  std::cout << "write-allocate (stores into flushed lines) " << fmt(d.cpu->write_allocate_bw_GBps, 1) << " GB/s\n";
  std::cout << "conditions: other processes busy on " << (r.others_busy_during < 0 ? "?" : fmt(r.others_busy_during, 2))
            << " of " << cores << " cores while probing, spread " << fmt(r.spread, 1) << "% (" << r.spread_of << ")\n";
  std::cout << "probed in " << fmt(r.seconds, 1) << " s" << (a.quick ? " (quick)" : "") << "\n";
  if (!cache_line.empty()) std::cout << cache_line << "\n";
  if (!a.out.empty()) std::cout << "wrote " << a.out << " (use it with --device " << a.out << ")\n";
}
}  // namespace

void add_probe(CLI::App& app) {
  auto a = std::make_shared<ProbeArgs>();
  auto* cmd = app.add_subcommand(
      "probe",
      "measure this CPU (triad bandwidth per cache level, write-allocate stores, FP32, dispatch, the contraction "
      "library per contraction class, transcendental ops) in under a minute and refresh the cached host device "
      "--device host-cpu uses");
  cmd->add_option("-o,--output", a->out, "also write the device JSON here (use it as --device FILE)")
      ->check(file_name());
  cmd->add_option("--threads", a->threads,
                  "threads the kernels will run on (OMP_NUM_THREADS; 0 = every core): sets launch_us, the pool's "
                  "fork-join, or with 1 the timed empty call, and the contraction throughput's threads; the rest is "
                  "measured on every core. Only the every-core device is cached; another count needs -o")
      ->capture_default_str()
      ->check(integer_in(0, 4096));
  cmd->add_flag("--quick", a->quick, "the quick probe --device host-cpu runs on first use (fewer samples)");
  cmd->callback([a] { run_probe_command(*a); });
}

}  // namespace fuseplan::cli
