#pragma once
// UTF-8 well-formedness, as prompts, recordings and token pieces need it.
#include <string_view>

namespace h2o {

// True when every lead byte is followed by its continuation bytes. (Overlong
// forms and surrogates are not checked: this guards JSON and display, not a codec.)
bool valid_utf8(std::string_view s);

}  // namespace h2o
