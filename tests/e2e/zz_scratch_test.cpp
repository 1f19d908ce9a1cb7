#include <gtest/gtest.h>
#include "e2e/server_process.hpp"
#include "e2e/stream_collector.hpp"
namespace pagedserve::e2e {
TEST(scratch, arrival) {
  for (int rep = 0; rep < 3; ++rep) {
    server_process server;
    ASSERT_TRUE(server.ready());
    ws_client c;
    ASSERT_TRUE(c.connect(server.port()));
    auto t0 = steady::now();
    ASSERT_TRUE(c.send_text(generate_frame("long", "Once upon a time", 400, R"(,"ignore_eos":true)")));
    std::string line;
    for (int i = 0; i < 12; ++i) {
      auto f = c.read(std::chrono::seconds(5));
      auto ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
      line += std::to_string(ms).substr(0, 5) + " ";
    }
    fprintf(stderr, "arrivals: %s\n", line.c_str());
  }
}
}
