#include "publish/mlflow_client.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace stepscope {
namespace {

TEST(MlflowClient, PercentEncodesAllButUnreservedCharacters) {
  EXPECT_EQ(percent_encoded("Default"), "Default");
  EXPECT_EQ(percent_encoded("a-b.c_d~e"), "a-b.c_d~e");
  EXPECT_EQ(percent_encoded("my exp/1?&=#"), "my%20exp%2F1%3F%26%3D%23");
  EXPECT_EQ(percent_encoded("\xc3\xa9\xff"), "%C3%A9%FF");
}

// Only a tracking server's REST API: a store path or a Databricks profile is refused at once.
TEST(MlflowClient, RefusesATrackingUriThatIsNotHttp) {
  for (const char* uri : {"file:///tmp/mlruns", "databricks", "sqlite:///mlflow.db", "./mlruns", "ftp://host"}) {
    try {
      MlflowClient client(uri);
      ADD_FAILURE() << uri << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is not an http:// or https:// address"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stepscope
