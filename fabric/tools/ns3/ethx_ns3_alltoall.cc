// ethx_ns3_alltoall: the ns-3 half of fabric/tools/sim_vs_ns3.sh (see docs/sim-vs-ns3.md).
//
// N hosts, each with one CsmaNetDevice on its own CSMA link to a switch node; the switch holds a
// BridgeNetDevice (ns-3's learning L2 switch) over its N CSMA ports. Every host runs one small
// application with one UDP socket that sends `--packets-per-pair` datagrams of `--payload` bytes to
// every other host, round robin over the peers, one datagram per interval (set by `--load`, the
// offered load per link, or by `--interval-ns`), and counts the datagrams it receives.
// Simulator::Run() is timed with std::chrono::steady_clock (wall) and the process CPU clock.
//
// Output on stdout, one `key value` pair per line (fabric/tools/sim_vs_ns3.sh parses it):
//   hosts, packets_per_pair, payload_bytes, packets_sent, packets_received, events,
//   packets_dropped, sim_seconds, wall_seconds, cpu_seconds, packets_per_wall_second (and the
//   parameters used)
//
// Built against Debian's libns3-dev (3.37) by sim_vs_ns3.sh; by hand:
//   g++ -O2 -std=c++17 ethx_ns3_alltoall.cc -o ethx_ns3_alltoall -lns3-applications
//       -lns3-bridge -lns3-csma -lns3-internet -lns3-network -lns3-core   (one line)
#include "ns3/applications-module.h"
#include "ns3/bridge-module.h"
#include "ns3/core-module.h"
#include "ns3/csma-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

using namespace ns3;

namespace {

// Counters shared by all hosts (the simulator is single-threaded).
uint64_t g_sent = 0;
uint64_t g_received = 0;
uint64_t g_received_bytes = 0;
uint64_t g_dropped = 0;  // any drop trace of a CSMA device, its queue or the IPv4 layer

void CountDrop(Ptr<const Packet>) {
  ++g_dropped;
}
void CountIpDrop(const Ipv4Header&, Ptr<const Packet>, Ipv4L3Protocol::DropReason, Ptr<Ipv4>,
                 uint32_t) {
  ++g_dropped;
}

// One per host: sends round robin to every peer and counts what arrives on the same socket.
class AllToAllApp : public Application {
 public:
  AllToAllApp(std::vector<Ipv4Address> peers, uint16_t port, uint32_t payload, uint64_t per_pair,
              Time first_send, Time interval)
      : peers_(std::move(peers)),
        port_(port),
        payload_(payload),
        remaining_(per_pair * peers_.size()),
        first_send_(first_send),
        interval_(interval) {}

 private:
  void StartApplication() override {
    socket_ = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    if (socket_->Bind(InetSocketAddress(Ipv4Address::GetAny(), port_)) != 0) {
      NS_FATAL_ERROR("bind failed");
    }
    socket_->SetRecvCallback(MakeCallback(&AllToAllApp::Receive, this));
    if (remaining_ > 0) send_event_ = Simulator::Schedule(first_send_, &AllToAllApp::Send, this);
  }

  void StopApplication() override {
    Simulator::Cancel(send_event_);
    if (socket_) socket_->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
  }

  void Send() {
    const Ipv4Address& to = peers_[next_peer_];
    next_peer_ = (next_peer_ + 1) % peers_.size();
    if (socket_->SendTo(Create<Packet>(payload_), 0, InetSocketAddress(to, port_)) >= 0) {
      ++g_sent;
    }
    if (--remaining_ > 0) send_event_ = Simulator::Schedule(interval_, &AllToAllApp::Send, this);
  }

  void Receive(Ptr<Socket> socket) {
    Ptr<Packet> packet;
    while ((packet = socket->Recv())) {
      ++g_received;
      g_received_bytes += packet->GetSize();
    }
  }

  std::vector<Ipv4Address> peers_;
  uint16_t port_;
  uint32_t payload_;
  uint64_t remaining_;
  Time first_send_;
  Time interval_;
  size_t next_peer_ = 0;
  Ptr<Socket> socket_;
  EventId send_event_;
};

// CPU time of this process (on a shared machine, wall time also counts waiting for a core).
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Fill every host's ARP cache with every other host's MAC (permanent entries), so the run
// carries data packets only. (With dynamic ARP, the first datagrams to each peer wait for
// resolution, and under this all-to-all burst ARP's small pending queue drops some of them.)
void PopulateArp(const NodeContainer& hosts, const NetDeviceContainer& host_devices,
                 const Ipv4InterfaceContainer& addresses) {
  for (uint32_t i = 0; i < hosts.GetN(); ++i) {
    Ptr<Ipv4L3Protocol> ip = hosts.Get(i)->GetObject<Ipv4L3Protocol>();
    const int32_t if_index = ip->GetInterfaceForDevice(host_devices.Get(i));
    Ptr<ArpCache> cache = ip->GetInterface(if_index)->GetArpCache();
    for (uint32_t j = 0; j < hosts.GetN(); ++j) {
      if (j == i) continue;
      ArpCache::Entry* entry = cache->Add(addresses.GetAddress(j));
      entry->SetMacAddress(host_devices.Get(j)->GetAddress());
      entry->MarkPermanent();
    }
  }
}

struct Options {
  uint32_t hosts = 32;
  uint64_t packets_per_pair = 100;
  uint32_t payload = 64;
  std::string data_rate = "800Gbps";  // ethx default [link] rate_gbps
  uint64_t delay_ns = 10;             // ethx default [link] propagation_ns
  double load = 0.1;                  // light: few CSMA backoffs, the fastest setting for ns-3
  uint64_t interval_ns = 0;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  CommandLine cmd(__FILE__);
  cmd.AddValue("hosts", "number of hosts on the switch", options.hosts);
  cmd.AddValue("packets-per-pair", "UDP datagrams each host sends to each other host",
               options.packets_per_pair);
  cmd.AddValue("payload", "UDP payload bytes per datagram", options.payload);
  cmd.AddValue("data-rate", "CSMA link rate (ns-3 DataRate string)", options.data_rate);
  cmd.AddValue("delay-ns", "CSMA link propagation delay in nanoseconds", options.delay_ns);
  cmd.AddValue("load",
               "offered load per link (0..1) that sets the gap between one host's sends "
               "(used when --interval-ns is 0)",
               options.load);
  cmd.AddValue("interval-ns", "gap between one host's sends in nanoseconds (0: from --load)",
               options.interval_ns);
  cmd.Parse(argc, argv);
  return options;
}

// Why the options cannot run, or nullptr.
const char* OptionError(const Options& options) {
  if (options.hosts < 2) return "--hosts must be at least 2";
  if (!(options.load > 0.0 && options.load < 1.0) && options.interval_ns == 0) {
    return "--load must be in (0, 1)";
  }
  if (options.payload < 1 || options.payload > 1472) return "--payload must be 1..1472";
  return nullptr;
}

// The gap between one host's sends: --interval-ns, or the one that offers --load per link.
Time SendInterval(const Options& options, const DataRate& rate) {
  if (options.interval_ns > 0) return NanoSeconds(static_cast<int64_t>(options.interval_ns));
  // Ethernet (DIX) frame as CsmaNetDevice sends it: 14 B header, 20 IPv4, 8 UDP, payload, 4 FCS.
  const uint32_t frame_bytes = 14 + 20 + 8 + options.payload + 4;
  const Time frame_time = rate.CalculateBytesTxTime(frame_bytes);
  // A CSMA link is half duplex: one frame holds it for the frame time, the 96-bit interframe gap
  // and the propagation delay. Each host sends one frame per interval and (all-to-all, round
  // robin) receives one per interval, so a link carries two frames per interval.
  const Time link_busy_per_frame = frame_time + rate.CalculateBytesTxTime(12) +
                                   NanoSeconds(static_cast<int64_t>(options.delay_ns));
  return link_busy_per_frame * (2.0 / options.load);
}

// CsmaNetDevice's backoff slot defaults to 1 us (10 Mbit/s Ethernet). Ethernet defines the slot
// as 512 bit times; scale it to the link rate so the run's timing scales with the rate. A frame
// that runs out of retries is dropped, and the comparison needs every packet delivered, so
// allow practically unlimited retries.
void ScaleBackoff(const NetDeviceContainer& devices, const DataRate& rate) {
  const Time slot = rate.CalculateBytesTxTime(64);
  for (auto it = devices.Begin(); it != devices.End(); ++it) {
    // Order: csma-net-device.h names the last two parameters (maxRetries, ceiling), but the
    // definition in csma-net-device.cc takes them as (ceiling, maxRetries). The definition is
    // what runs: passed in the header's order, frames were dropped after 10 retries.
    DynamicCast<CsmaNetDevice>(*it)->SetBackoffParams(slot, /*minSlots=*/1, /*maxSlots=*/1000,
                                                      /*ceiling=*/10, /*maxRetries=*/1000000000);
  }
}

struct Network {
  NodeContainer hosts;
  NodeContainer switch_node;
  NetDeviceContainer host_devices;
  NetDeviceContainer switch_ports;
  Ipv4InterfaceContainer addresses;
};

// The hosts, each on its own CSMA link to a port of the switch node's bridge, with IPv4
// addresses and full ARP caches.
Network BuildNetwork(const Options& options, const DataRate& rate) {
  Network network;
  network.hosts.Create(options.hosts);
  network.switch_node.Create(1);

  CsmaHelper csma;
  csma.SetChannelAttribute("DataRate", DataRateValue(rate));
  csma.SetChannelAttribute("Delay", TimeValue(NanoSeconds(static_cast<int64_t>(options.delay_ns))));
  // Deep device queues: the comparison needs every packet delivered, none dropped.
  csma.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("100000p"));
  for (uint32_t i = 0; i < options.hosts; ++i) {
    NetDeviceContainer link =
        csma.Install(NodeContainer(network.hosts.Get(i), network.switch_node.Get(0)));
    network.host_devices.Add(link.Get(0));
    network.switch_ports.Add(link.Get(1));
  }
  ScaleBackoff(network.host_devices, rate);
  ScaleBackoff(network.switch_ports, rate);

  BridgeHelper bridge;
  bridge.Install(network.switch_node.Get(0), network.switch_ports);

  InternetStackHelper internet;
  internet.Install(network.hosts);
  Ipv4AddressHelper ipv4;
  ipv4.SetBase("10.0.0.0", "255.255.0.0");
  network.addresses = ipv4.Assign(network.host_devices);
  PopulateArp(network.hosts, network.host_devices, network.addresses);
  return network;
}

void CountDrops() {
  for (const char* source : {"MacTxDrop", "PhyTxDrop", "PhyRxDrop", "TxQueue/Drop"}) {
    Config::ConnectWithoutContext(
        std::string("/NodeList/*/DeviceList/*/$ns3::CsmaNetDevice/") + source,
        MakeCallback(&CountDrop));
  }
  Config::ConnectWithoutContext("/NodeList/*/$ns3::Ipv4L3Protocol/Drop",
                                MakeCallback(&CountIpDrop));
}

void InstallApps(const Network& network, const Options& options, Time interval) {
  const uint16_t port = 9;
  const uint32_t hosts = options.hosts;
  for (uint32_t i = 0; i < hosts; ++i) {
    // Peer order i+1, i+2, ... so the hosts do not all aim at the same receiver at once.
    std::vector<Ipv4Address> peers;
    for (uint32_t k = 1; k < hosts; ++k) {
      peers.push_back(network.addresses.GetAddress((i + k) % hosts));
    }
    // Every socket is bound at time 0 (no datagram may reach an unbound port); the hosts' first
    // sends are staggered across one interval so that their sends interleave.
    const Time first_send = NanoSeconds(1000) + interval * (static_cast<double>(i) / hosts);
    Ptr<AllToAllApp> app = CreateObject<AllToAllApp>(
        std::move(peers), port, options.payload, options.packets_per_pair, first_send, interval);
    network.hosts.Get(i)->AddApplication(app);
    app->SetStartTime(Seconds(0));
  }
}

struct RunTimes {
  double wall_seconds = 0;
  double cpu_seconds = 0;
  double sim_seconds = 0;
  uint64_t events = 0;
};

RunTimes RunTimed() {
  RunTimes run;
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = ProcessCpuSeconds();
  Simulator::Run();
  run.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  const auto wall_end = std::chrono::steady_clock::now();
  run.wall_seconds = std::chrono::duration<double>(wall_end - wall_start).count();
  run.sim_seconds = Simulator::Now().GetSeconds();
  run.events = Simulator::GetEventCount();
  Simulator::Destroy();
  return run;
}

struct Counts {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t received_bytes = 0;
  uint64_t dropped = 0;
};

// The `key value` lines sim_vs_ns3.sh parses.
std::string ReportText(const Options& options, const DataRate& rate, Time interval,
                       const RunTimes& run, const Counts& counts) {
  const double per_wall_second =
      run.wall_seconds > 0 ? static_cast<double>(counts.received) / run.wall_seconds : 0.0;
  char text[1024];
  std::snprintf(text, sizeof text,
                "hosts %u\n"
                "packets_per_pair %" PRIu64
                "\n"
                "payload_bytes %u\n"
                "data_rate_bps %" PRIu64
                "\n"
                "interval_ns %.3f\n"
                "packets_sent %" PRIu64
                "\n"
                "packets_received %" PRIu64
                "\n"
                "bytes_received %" PRIu64
                "\n"
                "packets_dropped %" PRIu64
                "\n"
                "events %" PRIu64
                "\n"
                "sim_seconds %.9f\n"
                "wall_seconds %.6f\n"
                "cpu_seconds %.6f\n"
                "packets_per_wall_second %.0f\n",
                options.hosts, options.packets_per_pair, options.payload, rate.GetBitRate(),
                interval.GetSeconds() * 1e9, counts.sent, counts.received, counts.received_bytes,
                counts.dropped, run.events, run.sim_seconds, run.wall_seconds, run.cpu_seconds,
                per_wall_second);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  if (const char* error = OptionError(options)) {
    std::fprintf(stderr, "ethx_ns3_alltoall: %s\n", error);
    return 2;
  }
  // Logging is compiled into Debian's ns-3 build: switch every component off, NS_LOG included.
  LogComponentDisableAll(LOG_LEVEL_ALL);
  Time::SetResolution(Time::PS);  // frame times at 100+ Gbit/s are a few ns

  const DataRate rate(options.data_rate);
  const Time interval = SendInterval(options, rate);
  const Network network = BuildNetwork(options, rate);
  CountDrops();
  InstallApps(network, options, interval);
  const RunTimes run = RunTimed();
  const Counts counts{g_sent, g_received, g_received_bytes, g_dropped};
  std::fputs(ReportText(options, rate, interval, run, counts).c_str(), stdout);
  return counts.received == counts.sent ? 0 : 3;
}
