#include "explorer/page.hpp"

#include <algorithm>
#include <map>

#include "explorer/assets.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/directory_write.hpp"

namespace gs::explorer {

StepSeries& Run::series_of(const std::string& chart, const std::string& name) {
  for (StepSeries& s : series)
    if (s.chart == chart && s.name == name) return s;
  series.push_back({chart, name, {}, {}});
  return series.back();
}

void Run::declare_chart(Chart chart) {
  if (std::none_of(charts.begin(), charts.end(), [&](const Chart& c) { return c.id == chart.id; }))
    charts.push_back(std::move(chart));
}

void Run::add_point(const std::string& chart, const std::string& name, std::size_t step, double value) {
  if (std::none_of(charts.begin(), charts.end(), [&](const Chart& c) { return c.id == chart; }))
    throw Error("explorer: run '" + this->name + "': series '" + name + "' names chart '" + chart +
                "', which was never declared (Run::declare_chart)");
  StepSeries& s = series_of(chart, name);
  if (!s.steps.empty() && step <= s.steps.back())
    throw Error("explorer: run '" + this->name + "': series '" + chart + "/" + name + "' got step " +
                std::to_string(step) + " after step " + std::to_string(s.steps.back()) + " (steps must increase)");
  s.steps.push_back(step);
  s.values.push_back(value);
}

void add_runs(Page& page, Page other) {
  for (Run& r : other.runs) {
    const auto taken = [&](const std::string& name) {
      return std::any_of(page.runs.begin(), page.runs.end(), [&](const Run& p) { return p.name == name; });
    };
    std::string name = r.name;
    for (int k = 2; taken(name); ++k) name = r.name + " (" + std::to_string(k) + ")";
    r.name = name;
    page.runs.push_back(std::move(r));
  }
}

namespace {

std::string html_escaped(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : std::string(1, c);
  return out;
}

// JSON inside <script type="application/json">: no '<' at all, so neither "</script" nor "<!--" can
// end or confuse the block. "\u003c" is the same string to JSON.parse.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (char c : json) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

// The answer block of docs/lesson.md as HTML: any HTML comment dropped, the rest escaped, **bold** and
// `code` marked up (one paragraph).
std::string answer_html(const std::string& markdown) {
  std::string text;
  for (std::size_t i = 0; i < markdown.size();) {
    if (markdown.compare(i, 4, "<!--") == 0) {
      const std::size_t end = markdown.find("-->", i);
      i = end == std::string::npos ? markdown.size() : end + 3;
      continue;
    }
    text += markdown[i++];
  }
  const std::string escaped = html_escaped(text);
  std::string out = "<p>";
  bool bold = false, code = false;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped.compare(i, 2, "**") == 0) {
      out += bold ? "</b>" : "<b>";
      bold = !bold;
      ++i;
    } else if (escaped[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else {
      out += escaped[i];
    }
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out + "</p>";
}

const std::string data_open = "<script type=\"application/json\" id=\"gradscope-data\">";

}  // namespace

std::string page_html(const Page& page, std::string_view program) {
  const std::map<std::string, std::string> fill = {
      {"SIGNATURE", html_escaped(nn::output_signature(program.empty() ? nn::this_program() : std::string(program)))},
      {"TITLE", html_escaped(page.title)},  {"CSS", assets::page_css},   {"CHART_JS", assets::chart_js},
      {"D3_JS", assets::d3_js},             {"APP_JS", assets::page_js},
      {"SELFCHECK_JS", assets::selfcheck_js}, {"DATA", script_safe(page_json(page))},
      {"ANSWER", answer_html(assets::answer_block)}};
  // One pass over the template: {{NAME}} is replaced by fill[NAME], and nothing inserted is scanned again.
  const std::string tpl = assets::page_html;
  std::string out;
  std::size_t i = 0;
  for (std::size_t open; (open = tpl.find("{{", i)) != std::string::npos;) {
    const std::size_t close = tpl.find("}}", open);
    const auto it = close == std::string::npos ? fill.end() : fill.find(tpl.substr(open + 2, close - open - 2));
    if (it == fill.end()) throw Error("explorer: the page template has an unknown placeholder at byte " +
                                      std::to_string(open));
    out.append(tpl, i, open - i);
    out += it->second;
    i = close + 2;
  }
  out.append(tpl, i, std::string::npos);
  if (out.find(data_open) == std::string::npos) throw Error("explorer: the page template has no data block");
  return out;
}

void write_explorer_page(const std::filesystem::path& file, const Page& page, std::string_view program) {
  const std::string html = page_html(page, program);
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  nn::write_file_atomically(file, html);
}

Page read_explorer_page(const std::filesystem::path& file) {
  const std::string text = nn::read_file(file);
  const std::size_t open = text.find(data_open);
  const std::size_t close = open == std::string::npos ? open : text.find("</script>", open);
  if (close == std::string::npos)
    throw Error(file.string() + ": not an explorer page (no <script id=\"gradscope-data\"> block)");
  const std::size_t start = open + data_open.size();
  return parse_page_json(text.substr(start, close - start), file.string());
}

}  // namespace gs::explorer
