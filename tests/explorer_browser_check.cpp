// The explorer page in a real browser: trains tiny runs (post and pre, a few steps; once with
// LayerNorm, once with RMSNorm), writes their page, opens it in headless Chromium at
// page.html#selfcheck and reads the DOM Chromium dumps. The page's self-check
// (explorer/assets/selfcheck.js) selects a node, scrubs to another step, folds a block, switches runs
// and follows the tour, comparing what the page shows with its data.
// Fails on any FAIL line, on any JavaScript error the page caught, or when the check did not finish.
// Exit 77 (ctest: skipped) only where Chromium is missing; one that is installed and breaks fails.
//
//   build/bin/explorer_browser_check [--keep DIR]      (--keep: leave the page and the dumped DOM there)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "experiments/demo_run.hpp"
#include "explorer/page.hpp"
#include "nn/io/atomic_file.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int skipped = 77;

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (std::system(("command -v " + std::string(name) + " > /dev/null 2>&1").c_str()) == 0) return name;
  return "";
}

// Chromium's --dump-dom of `url` into `out`; returns the exit status.
int dump_dom(const std::string& browser, const std::string& url, const fs::path& profile, const fs::path& out,
             const fs::path& log) {
  const std::string command = "timeout 60 " + browser +
                              " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                              " --disable-background-networking --disable-component-update --disable-sync"
                              " --window-size=1280,800 --user-data-dir='" + profile.string() + "' --virtual-time-budget=10000 --dump-dom '" +
                              url + "' > '" + out.string() + "' 2> '" + log.string() + "'";
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// The text of <pre id="ID" ...>...</pre> in the dumped DOM ("" if absent). The page writes only plain
// text lines there, so no entity but &lt; &gt; &amp; &quot; can occur; they are left as they are.
std::string element_text(const std::string& dom, const std::string& id) {
  const std::size_t open = dom.find("<pre id=\"" + id + "\"");
  const std::size_t start = open == std::string::npos ? open : dom.find('>', open);
  const std::size_t end = start == std::string::npos ? start : dom.find("</pre>", start);
  return end == std::string::npos ? "" : dom.substr(start + 1, end - start - 1);
}

// Writes the page of `o`'s runs into dir/NAME.html and runs its self-check in Chromium: 0 passed,
// 1 failed (a Chromium that is installed and does not start or dumps no page fails too).
int check_page(const std::string& browser, const fs::path& dir, const std::string& name,
               const gs::explorer::DemoOptions& o) {
  const fs::path page_file = fs::absolute(dir / (name + ".html"));
  const auto start = Clock::now();
  gs::explorer::write_explorer_page(page_file, gs::explorer::demo_page(o));
  const auto written = Clock::now();
  const int status = dump_dom(browser, "file://" + page_file.string() + "#selfcheck", dir / "profile",
                              dir / (name + ".dom.html"), dir / "chromium.log");
  const auto opened = Clock::now();
  const std::string dom = gs::nn::read_file(dir / (name + ".dom.html"));
  if (status != 0 || dom.find("<html") == std::string::npos) {
    const std::string log = gs::nn::read_file(dir / "chromium.log");
    std::printf("FAILED: %s is installed but could not start or dumped no DOM (exit status %d); its log ends:\n%s\n",
                browser.c_str(), status, log.substr(log.size() > 1500 ? log.size() - 1500 : 0).c_str());
    return 1;
  }
  const std::string checks = element_text(dom, "selfcheck"), errors = element_text(dom, "js-errors");
  std::printf("== %s\n%s", name.c_str(), checks.c_str());
  if (!errors.empty()) std::printf("JavaScript errors:\n%s", errors.c_str());
  std::printf("page %zu bytes, written in %.1f s; chromium opened and checked it in %.1f s\n",
              static_cast<std::size_t>(fs::file_size(page_file)), std::chrono::duration<double>(written - start).count(),
              std::chrono::duration<double>(opened - written).count());
  // The last line: "SELFCHECK DONE <passed> passed <failed> failed".
  const std::size_t at = checks.rfind("SELFCHECK DONE ");
  int passed = -1, failed = -1;
  const bool finished = at != std::string::npos &&
                        std::sscanf(checks.c_str() + at, "SELFCHECK DONE %d passed %d failed", &passed, &failed) == 2;
  if (!finished) std::printf("FAILED: the self-check did not finish (no SELFCHECK DONE line in the DOM)\n");
  return finished && failed == 0 && passed >= 20 && errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string browser = chromium();
  if (browser.empty()) {
    std::printf("SKIPPED: chromium is not installed (apt-get install chromium; scripts/install-deps does)\n");
    return skipped;
  }
  const bool keep = argc == 3 && std::string(argv[1]) == "--keep";
  const fs::path dir = keep ? fs::path(argv[2]) : fs::temp_directory_path() / ("gradscope_explorer_browser_" +
                                                                              std::to_string(::getpid()));
  fs::create_directories(dir / "profile");
  int result = 0;
  try {
    gs::explorer::DemoOptions o;
    o.model.layers = 2;
    o.model.d_model = 16;
    o.model.heads = 2;
    o.model.d_ff = 32;
    o.steps = 6;
    o.eval_batches = 2;
    o.runs = {{"post", 0, ""}, {"pre", 0, ""}, {"post", 0, "ln-undo-gain"}};
    o.recorder.snapshot_steps = {0, 1, 3, 6};
    result = check_page(browser, dir, "layernorm", o);
    // The same page of RMSNorm runs: the charts and the tour find its norm traces too.
    o.model.norm = gs::nn::Norm::rms;
    o.runs = {{"post", 0, ""}, {"pre", 0, ""}};
    if (result == 0) result = check_page(browser, dir, "rmsnorm", o);
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    result = 1;
  }
  if (!keep) fs::remove_all(dir);
  return result;
}
