// Names in tables: a kernel's parameter list goes before its template
// arguments do, and the middle before either end, so two instances (or two
// files' functions) stay two names.
#include <gtest/gtest.h>

#include <string>

#include "renderers/fitted_name.hpp"

namespace stepscope {
namespace {

const std::string kParams = "(at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, int>, float, long)";

TEST(FittedName, ShortNamesPassThroughWhole) {
  EXPECT_EQ(fitted_name("aten::mm", 50), "aten::mm");
  EXPECT_EQ(fitted_name("void k<float>(float*, int)", 50), "void k<float>(float*, int)");
}

TEST(FittedName, LongSignatureLosesItsParametersBeforeItsTemplateArguments) {
  std::string five = "void split_embedding_backward_kernel<float, float, float, 5ul>" + kParams;
  std::string two = "void split_embedding_backward_kernel<float, float, float, 2ul>" + kParams;
  EXPECT_EQ(fitted_name(five, 100), "void split_embedding_backward_kernel<float, float, float, 5ul>(...)");
  EXPECT_NE(fitted_name(five, 60), fitted_name(two, 60));
}

// Kineto's split_embedding_backward_..._cta_per_row_1<float, float, float, 5ul>
// and <..., 2ul> differ only near the end of what is left.
TEST(FittedName, StillTooLongLosesItsMiddle) {
  std::string name = std::string(80, 'k') + "<int>" + kParams;
  EXPECT_EQ(fitted_name(name, 50), std::string(24, 'k') + "..." + std::string(13, 'k') + "<int>(...)");
  std::string function = "forward (/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py)";
  EXPECT_EQ(fitted_name(function, 60), "forward (/venv/lib/python3.11...els/llama/modeling_llama.py)");
}

// "Memcpy HtoD (Pageable -> Device)" ends in a parenthesis that is no
// parameter list; nested parentheses inside one are matched.
TEST(FittedName, OnlyAParameterListRightAfterTheNameIsElided) {
  std::string annotated = std::string(60, 'x') + " (Pageable -> Device)";
  EXPECT_EQ(fitted_name(annotated, 40), std::string(19, 'x') + "...ageable -> Device)");
  std::string nested = std::string(40, 'f') + "(void (*)(int), int)";
  EXPECT_EQ(fitted_name(nested, 50), std::string(40, 'f') + "(...)");
  EXPECT_EQ(fitted_name("unbalanced) tail)" + std::string(60, 'z') + ")", 20), "unbalance...zzzzzzz)");
}

TEST(FittedName, ControlBytesStayEscaped) {
  std::string name = "k\x1b[31m<int>" + kParams;
  EXPECT_EQ(fitted_name(name, 40), "k\\x1B[31m<int>(...)");
}

}  // namespace
}  // namespace stepscope
