#include "CNetlinkShims.h"
