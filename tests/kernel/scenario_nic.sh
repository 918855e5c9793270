#!/bin/sh
# Guest side: the NIC is up and raw DxFP-type Ethernet frames make the round trip to the host.
if [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ]; then
  echo "DXPU-TEST: PASS eth0 has carrier"
else
  echo "DXPU-TEST: FAIL eth0 has no carrier"
fi
/bin/raw_echo eth0 200
