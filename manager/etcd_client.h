// etcd_client.h - the few etcd v3 calls the pool manager makes, over etcd's JSON gateway
// (POST /v3/kv/range, /v3/kv/txn, /v3/lease/grant|keepalive|revoke on each member's client
// URL; etcd 3.4, Debian's etcd-server). Keys and values are bytes (base64 on the wire).
//
// The client knows every member's URL and talks to one at a time, over a kept connection: a member
// that does not answer, or answers that it has no leader, is left for the next one. Each call has a
// deadline (timeout_ms per member tried); an etcd cluster without quorum answers no write and no
// linearizable read, so every call then fails with kUnavailable "etcd-unavailable" saying what
// each member said. Whatever a member sends is untrusted: an answer that is not what the API
// documents is kUnavailable "etcd-bad-answer", never a crash.
//
// An error from Txn after the request was sent is ambiguous: the transaction may have been
// applied. The caller must find out (etcd_store.h reads its commit marker back).
#ifndef DXPU_MANAGER_ETCD_CLIENT_H_
#define DXPU_MANAGER_ETCD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "manager/pool_error.h"
#include "manager/tls.h"

namespace httplib {
class Client;
}

namespace dxpu::manager {

struct EtcdKv {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// One compare of a transaction (always "EQUAL"): a key's create revision (0: the key does not
// exist), its mod revision, or its value.
struct EtcdCompare {
  enum class Target : uint8_t { kCreate, kMod, kValue };
  std::string key;
  Target target = Target::kCreate;
  int64_t revision = 0;  // kCreate, kMod
  std::string value;     // kValue
};

// One operation of a transaction: a put (with a lease, or 0), a delete of one key, or a read
// of one key.
struct EtcdOp {
  enum class Kind : uint8_t { kPut, kDelete, kGet };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;
  int64_t lease = 0;
};

struct EtcdTxnResult {
  bool succeeded = false;  // every compare held: the success ops ran, else the failure ops
  int64_t revision = 0;    // the store's revision after the transaction
  std::vector<std::optional<EtcdKv>> reads;  // one per kGet op that ran, in order
};

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // each member's client URL: "http://127.0.0.1:2379"
  TlsFiles tls;                        // for https:// endpoints: this client's certificate, the CA
  int timeout_ms = 2000;               // per member tried
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Every key that starts with `prefix`, in key order, read in pages (a large pool does not
  // fit one answer). *revision: the store's revision the read saw (one revision for all pages).
  PoolResult<std::vector<EtcdKv>> ReadPrefix(const std::string& prefix, int64_t* revision);
  // One key, or nullopt.
  PoolResult<std::optional<EtcdKv>> Get(const std::string& key);
  PoolResult<EtcdTxnResult> Txn(const std::vector<EtcdCompare>& compares,
                                const std::vector<EtcdOp>& success,
                                const std::vector<EtcdOp>& failure);
  // A lease of ttl_s seconds: its ID.
  PoolResult<int64_t> GrantLease(int64_t ttl_s);
  // Renews the lease: the seconds it has left, 0 when it has expired (or was revoked).
  PoolResult<int64_t> KeepAlive(int64_t lease);
  PoolResult<Done> Revoke(int64_t lease);
  // Deletes every key that starts with `prefix`.
  PoolResult<Done> DeletePrefix(const std::string& prefix);

 private:
  PoolResult<std::string> Post(const std::string& path, const std::string& body);
  httplib::Client* ClientFor(size_t member);  // under mu_
  PoolResult<std::vector<EtcdKv>> RangePage(const std::string& key, const std::string& end,
                                            int64_t revision, int64_t limit, bool* more,
                                            int64_t* at_revision);

  EtcdClientOptions options_;
  std::mutex mu_;       // one call at a time: the connections are not shared
  size_t current_ = 0;  // the member that answered last
  std::vector<std::unique_ptr<httplib::Client>> clients_;  // per member, made on first use
};

// The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(const std::string& prefix);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_ETCD_CLIENT_H_
