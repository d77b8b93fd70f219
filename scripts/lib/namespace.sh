# Sourced by scripts/bench and scripts/order-functions.
#
# uplink_namespace NS [PREFIX]: makes network namespace NS with loopback up and an Ethernet-like uplink: eth0, one end
# of a veth pair whose other end (up0) stays inside, holding PREFIX.2/24 and the default route via PREFIX.1 (PREFIX
# 10.10.0 unless given). Nothing answers at the gateway and nothing leaves the namespace; it is the route an agent
# sees that matters. The caller deletes NS.
uplink_namespace() {
  local ns=$1 prefix=${2:-10.10.0}
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add eth0 type veth peer name up0
  ip -n "$ns" addr add "$prefix.2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set up0 up
  ip -n "$ns" route add default via "$prefix.1"
}
