// `stepscope compare --markdown`: GitHub-flavoured Markdown tables for a
// pull-request comment or a CI job summary ($GITHUB_STEP_SUMMARY).
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "analyses/compare/compare.hpp"

namespace stepscope {

void write_compare_markdown(const CompareResult& result, std::ostream& out);

// `text` made inert in Markdown and in the HTML GitHub allows in it:
// printable, ASCII punctuation backslash-escaped, < > & as entities.
std::string markdown_text(std::string_view text);

}  // namespace stepscope
