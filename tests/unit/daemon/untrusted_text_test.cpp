// untrusted_text.h: strings from agents and files made valid, bounded and terminal-safe.
#include <gtest/gtest.h>

#include "fleetscope/common/untrusted_text.h"

namespace fleetscope::text {
namespace {

TEST(UntrustedText, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(valid_utf8("ok"), "ok");
  EXPECT_EQ(valid_utf8("a\xff"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80").size(), 12u);                          // above U+10FFFF
  EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xE6\x97\xA5"), "caf\xC3\xA9 \xE6\x97\xA5");
  EXPECT_TRUE(is_valid_utf8(valid_utf8(std::string("\xE6\x97", 2))));
}

TEST(UntrustedText, BoundsCutAtACharacterAndSaySo) {
  bool cut = false;
  EXPECT_EQ(valid_utf8("\xC3\xA9\xC3\xA9", 3, &cut), "\xC3\xA9");  // never half a character
  EXPECT_TRUE(cut);
  EXPECT_EQ(valid_utf8("abc", 3, &cut), "abc");
  EXPECT_FALSE(cut);
  EXPECT_EQ(bounded_field(std::string(300, 'x'), 256),
            std::string(256, 'x') + " [cut at 256 bytes]");
  EXPECT_EQ(bounded_field("short", 256), "short");
}

TEST(UntrustedText, ControlCharactersNeverReachATerminalRaw) {
  EXPECT_EQ(terminal_safe("\x1b]0;title\x07"), "\\x1B]0;title\\x07");
  EXPECT_EQ(terminal_safe("a\nb\tc\x7f"), "a\\x0Ab\\x09c\\x7F");
  EXPECT_EQ(terminal_safe("\xC2\x9B"
                          "31m"),
            "\\u{009B}31m");  // C1 CSI
  EXPECT_EQ(terminal_safe("\xff"), "\\xFF");
  EXPECT_EQ(terminal_safe("caf\xC3\xA9 \xC2\xA0ok"), "caf\xC3\xA9 \xC2\xA0ok");  // kept
}

}  // namespace
}  // namespace fleetscope::text
