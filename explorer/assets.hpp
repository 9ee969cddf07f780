// The page's own HTML, CSS and JavaScript (assets/), and the JavaScript libraries it inlines (Debian's
// libjs-chart.js and libjs-d3), compiled into the binary by CMake (embed_assets.cmake) so that a
// binary writes a page from any working directory.
#pragma once

namespace gs::explorer::assets {

extern const char* const page_html;  // assets/page.html: the template with {{NAME}} placeholders
extern const char* const page_css;   // assets/page.css
extern const char* const page_js;    // assets/page.js: the glue (graph, panel, scrubber, charts, self-check)
extern const char* const selfcheck_js;  // assets/selfcheck.js: run by page.html#selfcheck (the browser test)
extern const char* const answer_block;  // docs/lesson.md's "answer" block (markdown), shown on the page
extern const char* const chart_js;   // Chart.js 3.9 (chart.min.js)
extern const char* const d3_js;      // d3 v3 (d3.min.js): pan and zoom, colour scales

}  // namespace gs::explorer::assets
