// C helpers the Swift importer cannot reach for libnl-3: attribute iteration macros and NLA_PUT wrappers.
// Every symbol carries the CNetlinkShims_ prefix.
#ifndef CNETLINKSHIMS_H
#define CNETLINKSHIMS_H
#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/addr.h>
#include <netlink/route/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/if_arp.h>
#include "CNetlinkShims_genl.h"
#endif
