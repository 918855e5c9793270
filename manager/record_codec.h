// record_codec.h - the pool's records (pool_model.h) as JSON text, for a store that keeps each
// record as one value (etcd_store.h). Every field that is persisted is written; a value read
// back is untrusted (another writer, a bad restore): anything missing, mistyped, out of range or
// unknown is refused (nullopt), never guessed at. Enumerations by their names, as in SQLite.
// A host's heartbeat interval is not persisted (in memory only, as in SQLite).
#ifndef DXPU_MANAGER_RECORD_CODEC_H_
#define DXPU_MANAGER_RECORD_CODEC_H_

#include <optional>
#include <string>
#include <string_view>

#include "manager/pool_model.h"

namespace dxpu::manager {

std::string EncodeRecord(const BoxRecord& box);
std::string EncodeRecord(const GpuRecord& gpu);
std::string EncodeRecord(const HostRecord& host);
std::string EncodeRecord(const AllocationRecord& allocation);
std::string EncodeRecord(const LeaseRecord& lease);

std::optional<BoxRecord> DecodeBox(std::string_view text);
std::optional<GpuRecord> DecodeGpu(std::string_view text);
std::optional<HostRecord> DecodeHost(std::string_view text);
std::optional<AllocationRecord> DecodeAllocation(std::string_view text);
std::optional<LeaseRecord> DecodeLease(std::string_view text);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_RECORD_CODEC_H_
