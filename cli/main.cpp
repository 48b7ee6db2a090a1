// fuseplan: cost-model-driven operator-fusion search. Each sub-command lives
// in its own cli/cmd_*.cpp. Failures become one line on stderr
// (non-printable bytes escaped, cli/common.h printable) and an exit code
// (README "Exit codes"): 2 the user's input (Error), 3 the environment (a
// file system or system call refused), 70 an internal error (InternalError,
// or any other exception: a defect of fuseplan's own).
#include <filesystem>
#include <iostream>
#include <system_error>

#include "cli/common.h"
#include "probe/host_device.h"

namespace fuseplan::cli { void add_gen(CLI::App& app); }  // cli/cmd_gen.cpp
namespace fuseplan::cli { void add_refeature(CLI::App& app); }  // cli/cmd_refeature.cpp

namespace {
constexpr int kExitInternal = 70;  // EX_SOFTWARE (sysexits.h)
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fuseplan: search, explain and measure operator-fusion plans"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fuseplan ") + fuseplan::fuseplan_version());
  fuseplan::cli::add_inspect(app);
  fuseplan::cli::add_probe(app);
  fuseplan::cli::add_cost(app);
  fuseplan::cli::add_search(app);
  fuseplan::cli::add_explain(app);
  fuseplan::cli::add_compare(app);
  fuseplan::cli::add_emit(app);
  fuseplan::cli::add_run(app);
  fuseplan::cli::add_measure(app);
  fuseplan::cli::add_calibrate(app);
  fuseplan::cli::add_accuracy(app);
  fuseplan::cli::add_refeature(app);
  fuseplan::cli::add_tune(app);
  fuseplan::cli::add_gen(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "fuseplan: error: " << fuseplan::cli::printable(e.what()) << "\n";
    return 2;
  } catch (const fuseplan::Error& e) {
    std::cerr << "fuseplan: error: " << fuseplan::cli::printable(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "fuseplan: error: out of memory\n";
    return 2;
  } catch (const fuseplan::EnvironmentError& e) {
    std::cerr << "fuseplan: error: " << fuseplan::cli::printable(e.what()) << "\n";
    return 3;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "fuseplan: error: " << fuseplan::cli::printable(e.what()) << "\n";
    return 3;
  } catch (const std::system_error& e) {
    std::cerr << "fuseplan: error: " << fuseplan::cli::printable(e.what()) << "\n";
    return 3;
  } catch (const std::exception& e) {
    // InternalError (FUSEPLAN_ASSERT) and anything unforeseen: a defect.
    std::cerr << "fuseplan: internal error: " << fuseplan::cli::printable(e.what())
              << " (a defect of fuseplan: please report it with this command line, the model and the output of"
                 " `fuseplan --version`)\n";
    return kExitInternal;
  }
  return 0;
}
