// What `ethx up` leaves running, recorded in one run directory so that `ethx status` can show
// it and `ethx down` can remove it, also after its processes were killed with SIGKILL.
//
// Where: $ETHX_RUN_DIR if set; else /run/ethx/up as root; else
// ${XDG_RUNTIME_DIR:-/tmp}/ethx-<uid>/up. Each fabric has <root>/<name>/ with state.json (this
// record), the processes' logs and the switch's live counters; <root>/<name>.lock serialises
// up, down and attached benchmarks of one name. Processes are recorded with their start time
// (process_identity.hpp): `ethx down` never signals a process that merely reused a PID.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/platform/process_watcher.hpp"

namespace ethx {

struct RecordedProcess {
  std::string role;  // "switch", "node-<gpu>", "up" (the ethx up that is still starting)
  pid_t pid = -1;
  std::string start_time;
  bool running() const;
};

struct RunState {
  std::string name;       // the user's name for the fabric ("default")
  std::string fabric;     // the instance name in /dev/shm names ("up-<name>")
  std::string transport;  // shm | afxdp | afpacket
  std::size_t gpus = 0;
  std::string config_path;         // empty: the embedded default
  std::string netns_tag;           // socket transports: names start ethx-<tag>-
  std::string phase = "starting";  // "starting", then "up"
  std::int64_t created_unix_s = 0;
  std::vector<RecordedProcess> processes;  // switch, nodes, and `ethx up` while starting
  std::vector<std::string> namespaces;     // what the veth topology creates
  std::vector<std::string> links;          // veth ends (inside those namespaces)
  std::vector<std::string> shared_memory;  // names in /dev/shm
  std::string stats_file;                  // the switch's live counters (JSON)
  std::size_t vms = 0;                     // GPUs 0 .. vms × gpus_per_vm − 1 are in VMs
  std::size_t gpus_per_vm = 0;
  bool guest_nics = false;  // `--guest-nics`: every VM has a NIC on the switch (softroce.md)

  nlohmann::json to_json() const;
  static RunState from_json(const nlohmann::json& value);  // throws std::runtime_error
};

// Fabric names: 1..16 characters of [a-z0-9-], starting with a letter or digit.
bool valid_fabric_name(const std::string& name);

class RunDirectory {
 public:
  // The root described above (not created).
  static std::string root();
  explicit RunDirectory(std::string name);

  const std::string& name() const { return name_; }
  std::string path() const;  // <root>/<name>
  std::string state_path() const { return path() + "/state.json"; }
  bool exists() const;

  // Takes <root>/<name>.lock (flock; blocks while another ethx up/down/bench of this name
  // holds it), creating the root. Released by the destructor.
  void lock();
  // Takes <root>/<name>.switch.lock (flock), which serialises replacing the switch process
  // (`ethx restart-switch`) with `ethx up` and `ethx down` (which take it after lock()). Not the
  // main lock, so a switch can be restarted while an attached benchmark runs. Released by the
  // destructor.
  void lock_switch();
  // True while another process holds the switch lock (a switch restart is under way).
  bool switch_lock_busy() const;
  // Creates the directory (0700).
  void create();
  // Writes the record atomically (temporary file + rename).
  void save(const RunState& state) const;
  std::optional<RunState> load() const;
  // Removes the directory with everything in it (logs, counters, the record).
  void remove() const;

  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

 private:
  std::string name_;
  int lock_fd_ = -1;
  int switch_lock_fd_ = -1;
};

// All fabric names with a run directory.
std::vector<std::string> list_run_directories();

// What to tell the user after a process of the fabric exited: "`ethx status` shows the fabric,
// `ethx down` removes it".
std::string degraded_fabric_hint(const RunState& state);

// A watcher (process_watcher.hpp) of every process `state` records, for commands that use a
// fabric `ethx up` left running (`ethx guest`, `ethx bench --vms`, `ethx softroce`): any exit
// stops the command, except the switch's while `ethx restart-switch` replaces it (its
// replacement is then not watched). `directory` must outlive the watcher.
// AttachedFabric (attached_fabric.hpp) also follows the replacement.
std::unique_ptr<ProcessWatcher> watch_recorded_processes(const RunDirectory& directory,
                                                         const RunState& state);

}  // namespace ethx
