#include <gtest/gtest.h>
#include "e2e/server_process.hpp"
#include "e2e/stream_collector.hpp"
namespace pagedserve::e2e {
TEST(scratch, timing) {
  for (int ballast : {0, 8, 32, 63}) {
    server_process server;
    ASSERT_TRUE(server.ready());
    ws_client b, c;
    ASSERT_TRUE(b.connect(server.port()));
    ASSERT_TRUE(c.connect(server.port()));
    for (int i = 0; i < ballast; ++i) ASSERT_TRUE(b.send_text(generate_frame("b" + std::to_string(i), "Once upon a time", 500, R"(,"ignore_eos":true)")));
    auto t0 = steady::now();
    ASSERT_TRUE(c.send_text(generate_frame("long", "Once upon a time", 400, R"(,"ignore_eos":true)")));
    stream_collector f, fb;
    read_until({{&c,&f},{&b,&fb}}, [&]{ return f.done("long"); }, std::chrono::seconds(60));
    auto ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
    fprintf(stderr, "ballast %d: wall %.1f ms frames %d done %s\n", ballast, ms, f["long"].n_token_frames, f["long"].dones[0].raw.c_str());
  }
}
}
