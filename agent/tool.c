/* Tool calls. (Being written.) */
#include "agent/internal.h"
