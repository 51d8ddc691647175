#pragma once
// report.html's charts: self-contained SVG (no scripts, no fonts fetched), laid out so that
// every label lies inside its chart whatever the numbers' lengths.
#include <string>

#include "kopt/report/run_report.hpp"

namespace kopt::report_detail {

// Text made safe inside HTML and SVG.
std::string esc(const std::string& s);

// The width a label of the charts' 11 px sans-serif takes, generously (6.5 px a character):
// what the layout reserves for it.
double label_width(const std::string& text);

std::string roofline_svg(const RunReport& r);
std::string timeline_svg(const RunReport& r);
std::string attribution_svg(const RunReport& r);

}  // namespace kopt::report_detail
