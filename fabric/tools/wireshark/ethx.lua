-- Wireshark / tshark dissector for ethx frames (docs/wireshark.md; the format: docs/wire-format.md).
--
--   tshark -X lua_script:fabric/tools/wireshark/ethx.lua -r capture.pcap -V
--   wireshark -X lua_script:fabric/tools/wireshark/ethx.lua capture.pcap
--
-- EtherType 0x88B5: the frame header (24 B), every transaction (16 B header and its payload),
-- link-layer fields (sequence, ACK, NAK, credits) and ACK/NAK control frames, then the CRC-32C,
-- checked; a link-level retry trailer (sequence, kind, epoch, link FCS, checked) and LLR's own
-- ACK/NAK control frames; CBFC credit updates (packet-engine/flow_control.hpp; PFC frames are
-- 802.1Qbb MAC control frames, which Wireshark decodes itself). EtherType 0x88B6: the benchmarks' echo frames. Offsets below are relative to the end
-- of the Ethernet header (byte 14 of the frame); the layout is written once, in
-- packet-engine/wire.hpp, and checked against this file by tests/integration/wireshark_dissector_test.cpp.

local ethx = Proto("ethx", "ethx load/store fabric")
local llr = Proto("ethx_llr", "ethx link-level retry")
local echo = Proto("ethx_echo", "ethx echo (benchmark baseline)")
local credit = Proto("ethx_credit", "ethx credit update (CBFC)")

local kFrameHeaderBytes = 24
local kTxnHeaderBytes = 16
local kCrcBytes = 4
local kVersion = 2
local kLlrTrailerBytes = 12  -- packet-engine/link_retry.hpp LlrTrailer (docs/link-layer.md)
local kLlrMagic = 0x4C52
local llr_kinds = { [1] = "data", [2] = "ack", [3] = "nak", [4] = "train", [5] = "train-ack" }
local kCreditMagic = 0x4346  -- packet-engine/flow_control.hpp CreditUpdateFrame
local kCreditBytes = 10      -- magic and two running totals, then padding

local opcodes = {
  [0x01] = "read-req", [0x02] = "read-resp", [0x03] = "write-posted", [0x04] = "write-req",
  [0x05] = "write-ack", [0x06] = "atomic-fetch-add", [0x07] = "atomic-swap",
  [0x08] = "atomic-cas", [0x09] = "atomic-resp", [0x0A] = "flush-req", [0x0B] = "flush-resp",
  [0x0C] = "error-resp",
}
local statuses = {
  [0] = "ok", [1] = "out-of-range", [2] = "no-rights", [3] = "partition", [4] = "bad-request",
  [5] = "timeout", [6] = "unreachable", [7] = "busy",
}

local f = ethx.fields
f.version = ProtoField.uint8("ethx.version", "Version")
f.flags = ProtoField.uint8("ethx.flags", "Flags", base.HEX)
f.flag_seq = ProtoField.bool("ethx.flags.seq", "Sequenced (seq valid)", 8, nil, 0x01)
f.flag_ack = ProtoField.bool("ethx.flags.ack", "ACK valid", 8, nil, 0x02)
f.flag_nak = ProtoField.bool("ethx.flags.nak", "NAK (resend after ack)", 8, nil, 0x04)
f.flag_credit = ProtoField.bool("ethx.flags.credit", "Credits valid", 8, nil, 0x08)
f.src_gpu = ProtoField.uint16("ethx.src_gpu", "Source GPU")
f.dst_gpu = ProtoField.uint16("ethx.dst_gpu", "Destination GPU")
f.partition = ProtoField.uint16("ethx.partition", "Partition")
f.body_bytes = ProtoField.uint16("ethx.body_bytes", "Body bytes")
f.txn_count = ProtoField.uint8("ethx.txn_count", "Transactions")
f.credits = ProtoField.uint8("ethx.credits", "Credits")
f.seq = ProtoField.uint32("ethx.seq", "Sequence number")
f.ack = ProtoField.uint32("ethx.ack", "Cumulative ACK")
f.incarnation = ProtoField.uint32("ethx.incarnation", "Sender incarnation", base.HEX)
f.kind = ProtoField.string("ethx.kind", "Frame kind")
f.txn = ProtoField.none("ethx.txn", "Transaction")
f.opcode = ProtoField.uint8("ethx.txn.opcode", "Opcode", base.HEX, opcodes)
f.status = ProtoField.uint8("ethx.txn.status", "Status", base.DEC, statuses)
f.tag = ProtoField.uint16("ethx.txn.tag", "Tag", base.HEX)
f.tag_slot = ProtoField.uint16("ethx.txn.tag.slot", "Tag slot", base.DEC, nil, 0x0FFF)
f.tag_generation = ProtoField.uint16("ethx.txn.tag.generation", "Tag generation", base.DEC, nil,
                                     0xF000)
f.length = ProtoField.uint16("ethx.txn.length", "Length")
f.payload_bytes = ProtoField.uint16("ethx.txn.payload_bytes", "Payload bytes")
f.address = ProtoField.uint64("ethx.txn.address", "Address", base.HEX)
f.payload = ProtoField.bytes("ethx.txn.payload", "Payload")
f.crc = ProtoField.uint32("ethx.crc", "CRC-32C", base.HEX)
f.crc_status = ProtoField.string("ethx.crc.status", "CRC status")

local fl = llr.fields
fl.seq = ProtoField.uint32("ethx_llr.seq",
  "Link sequence (data) / next expected (ACK, NAK) / nonce (TRAIN, TRAIN-ACK)")
fl.kind = ProtoField.uint8("ethx_llr.kind", "Kind", base.DEC, llr_kinds)
fl.epoch = ProtoField.uint8("ethx_llr.epoch", "Epoch")
fl.magic = ProtoField.uint16("ethx_llr.magic", "Magic", base.HEX)
fl.fcs = ProtoField.uint32("ethx_llr.fcs", "Link FCS (CRC-32C)", base.HEX)
fl.fcs_status = ProtoField.string("ethx_llr.fcs.status", "Link FCS status")

local e_malformed = ProtoExpert.new("ethx.malformed", "Malformed ethx frame", expert.group.MALFORMED,
                                    expert.severity.ERROR)
local e_bad_crc = ProtoExpert.new("ethx.bad_crc", "CRC-32C does not match", expert.group.CHECKSUM,
                                  expert.severity.ERROR)
local e_no_crc = ProtoExpert.new("ethx.no_crc", "No CRC-32C in the frame", expert.group.CHECKSUM,
                                 expert.severity.NOTE)
ethx.experts = { e_malformed, e_bad_crc, e_no_crc }

local eth_dst = Field.new("eth.dst")
local eth_src = Field.new("eth.src")

-- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, as wire::crc32c. With
-- Wireshark's `bit` library (LuaBitOp, in every Wireshark whatever its Lua version), whose
-- results are signed 32-bit numbers: compared through bit.tobit, printed with bit.tohex.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit.band(c, 1) == 1 then c = bit.bxor(bit.rshift(c, 1), 0x82F63B78)
    else c = bit.rshift(c, 1) end
  end
  crc_table[i] = c
end

local function crc32c_update(crc, bytes)
  for i = 0, bytes:len() - 1 do
    crc = bit.bxor(bit.rshift(crc, 8), crc_table[bit.band(bit.bxor(crc, bytes:get_index(i)), 0xFF)])
  end
  return crc
end

-- The CRC covers the Ethernet header too, which is not in our buffer: rebuilt from eth.dst,
-- eth.src and the EtherType.
local function frame_crc(tvb, covered)
  local crc = 0xFFFFFFFF
  crc = crc32c_update(crc, eth_dst().range:bytes())
  crc = crc32c_update(crc, eth_src().range:bytes())
  crc = crc32c_update(crc, ByteArray.new("88 B5"))
  crc = crc32c_update(crc, tvb(0, covered):bytes())
  return bit.bxor(crc, 0xFFFFFFFF)
end

local function add_flags(tree, tvb)
  local flags = tree:add(f.flags, tvb(1, 1))
  flags:add(f.flag_seq, tvb(1, 1))
  flags:add(f.flag_ack, tvb(1, 1))
  flags:add(f.flag_nak, tvb(1, 1))
  flags:add(f.flag_credit, tvb(1, 1))
end

local function add_frame_header(tree, tvb)
  tree:add(f.version, tvb(0, 1))
  add_flags(tree, tvb)
  tree:add(f.src_gpu, tvb(2, 2))
  tree:add(f.dst_gpu, tvb(4, 2))
  tree:add(f.partition, tvb(6, 2))
  tree:add(f.body_bytes, tvb(8, 2))
  tree:add(f.txn_count, tvb(10, 1))
  tree:add(f.credits, tvb(11, 1))
  tree:add(f.seq, tvb(12, 4))
  tree:add(f.ack, tvb(16, 4))
  tree:add(f.incarnation, tvb(20, 4))
end

-- One transaction at `at`; returns the offset after it and a word for the Info column, or nil
-- when it does not fit the body.
local function add_txn(tree, tvb, at, body_end)
  if at + kTxnHeaderBytes > body_end then return nil end
  local payload_bytes = tvb(at + 6, 2):uint()
  if at + kTxnHeaderBytes + payload_bytes > body_end then return nil end
  local opcode = tvb(at, 1):uint()
  local name = opcodes[opcode] or string.format("opcode-0x%02x", opcode)
  local txn = tree:add(f.txn, tvb(at, kTxnHeaderBytes + payload_bytes))
  txn:append_text(string.format(": %s tag 0x%04x addr 0x%s len %d", name, tvb(at + 2, 2):uint(),
                                tvb(at + 8, 8):uint64():tohex(), tvb(at + 4, 2):uint()))
  txn:add(f.opcode, tvb(at, 1))
  txn:add(f.status, tvb(at + 1, 1))
  local tag = txn:add(f.tag, tvb(at + 2, 2))
  tag:add(f.tag_slot, tvb(at + 2, 2))
  tag:add(f.tag_generation, tvb(at + 2, 2))
  txn:add(f.length, tvb(at + 4, 2))
  txn:add(f.payload_bytes, tvb(at + 6, 2))
  txn:add(f.address, tvb(at + 8, 8))
  if payload_bytes > 0 then txn:add(f.payload, tvb(at + kTxnHeaderBytes, payload_bytes)) end
  if opcode == 0x0C then name = name .. "(" .. (statuses[tvb(at + 1, 1):uint()] or "?") .. ")" end
  return at + kTxnHeaderBytes + payload_bytes, name
end

local function add_transactions(tree, tvb, count, body_end)
  local at, names = kFrameHeaderBytes, {}
  for _ = 1, count do
    local name
    at, name = add_txn(tree, tvb, at, body_end)
    if at == nil then
      tree:add_proto_expert_info(e_malformed, "transaction runs past the body")
      break
    end
    names[#names + 1] = name
  end
  if at ~= nil and at ~= body_end then
    tree:add_proto_expert_info(e_malformed, "txn_count does not fill the body")
  end
  return table.concat(names, ",")
end

local function add_crc(tree, tvb, covered)
  local item = tree:add(f.crc, tvb(covered, kCrcBytes))
  local carried = bit.tobit(tvb(covered, kCrcBytes):uint())
  local computed = bit.tobit(frame_crc(tvb, covered))
  if carried == computed then
    tree:add(f.crc_status, "good")
  elseif carried == 0 then
    -- ethx sim leaves the CRC out of frames that never touch a wire (docs/simulator.md); on a
    -- wire a zero CRC would be a frame whose CRC was never filled in: a note, not silence.
    tree:add(f.crc_status, "absent")
    item:add_proto_expert_info(e_no_crc, "CRC field is 0: a frame of ethx sim, or one whose CRC "
                                         .. "was never filled in (computed 0x" .. bit.tohex(computed) .. ")")
  else
    tree:add(f.crc_status, "bad")
    item:add_proto_expert_info(e_bad_crc, "CRC-32C does not match: computed 0x" .. bit.tohex(computed))
  end
end

-- "ACK 5", "NAK after 5", with the credits when valid.
local function control_text(tvb)
  local flags = tvb(1, 1):uint()
  local text = (bit.band(flags, 0x04) ~= 0) and "NAK after " or "ACK "
  text = text .. tvb(16, 4):uint()
  if bit.band(flags, 0x08) ~= 0 then text = text .. " credits " .. tvb(11, 1):uint() end
  return text
end

-- Whether the last 12 bytes are a link-level retry trailer: its magic, a known kind, and (for
-- data) a fabric frame that ends exactly where the trailer starts.
local function has_llr_trailer(tvb)
  local len = tvb:len()
  if len < kLlrTrailerBytes or tvb(len - 6, 2):uint() ~= kLlrMagic then return false end
  if llr_kinds[tvb(len - 8, 1):uint()] == nil then return false end
  if len == kLlrTrailerBytes then return true end  -- an ACK, NAK or training control frame
  return len >= kFrameHeaderBytes + kCrcBytes + kLlrTrailerBytes and
         kFrameHeaderBytes + tvb(8, 2):uint() + kCrcBytes + kLlrTrailerBytes == len
end

-- The trailer's tree; returns "LLR seq 5" / "LLR ACK 5" / "LLR NAK 5" / "LLR TRAIN 123" /
-- "LLR TRAIN-ACK 123" for the Info column.
local function add_llr_trailer(tree, tvb)
  local at = tvb:len() - kLlrTrailerBytes
  local root = tree:add(llr, tvb(at, kLlrTrailerBytes))
  root:add(fl.seq, tvb(at, 4))
  root:add(fl.kind, tvb(at + 4, 1))
  root:add(fl.epoch, tvb(at + 5, 1))
  root:add(fl.magic, tvb(at + 6, 2))
  local item = root:add(fl.fcs, tvb(at + 8, 4))
  local carried = bit.tobit(tvb(at + 8, 4):uint())
  local computed = bit.tobit(frame_crc(tvb, at + 8))
  if carried == computed then
    root:add(fl.fcs_status, "good")
  elseif carried == 0 then
    root:add(fl.fcs_status, "absent")  -- ethx sim without [sim] crc
  else
    root:add(fl.fcs_status, "bad")
    item:add_proto_expert_info(e_bad_crc, "link FCS does not match: computed 0x" .. bit.tohex(computed))
  end
  local kind = tvb(at + 4, 1):uint()
  local words = { [1] = "seq ", [2] = "ACK ", [3] = "NAK ", [4] = "TRAIN ", [5] = "TRAIN-ACK " }
  return "LLR " .. words[kind] .. tvb(at, 4):uint()
end

local function dissect_fabric(tvb, pinfo, tree)
  local root = tree:add(ethx, tvb())
  if tvb:len() < kFrameHeaderBytes then
    root:add_proto_expert_info(e_malformed, "frame header truncated")
    return tvb:len()
  end
  add_frame_header(root, tvb)
  if tvb(0, 1):uint() ~= kVersion then root:add_proto_expert_info(e_malformed, "unknown version") end
  local body_end = kFrameHeaderBytes + tvb(8, 2):uint()
  if body_end + kCrcBytes > tvb:len() then
    root:add_proto_expert_info(e_malformed, "body runs past the frame")
    return tvb:len()
  end
  local count = tvb(10, 1):uint()
  local route = string.format("GPU %d -> %d", tvb(2, 2):uint(), tvb(4, 2):uint())
  if count == 0 then
    local nak = bit.band(tvb(1, 1):uint(), 0x04) ~= 0
    root:add(f.kind, nak and "nak" or "ack")
    pinfo.cols.info = route .. " " .. control_text(tvb)
  else
    root:add(f.kind, "transactions")
    local names = add_transactions(root, tvb, count, body_end)
    local seq = ""
    if bit.band(tvb(1, 1):uint(), 0x01) ~= 0 then seq = " seq " .. tvb(12, 4):uint() end
    pinfo.cols.info = route .. seq .. " " .. names
  end
  add_crc(root, tvb, body_end)
  return body_end + kCrcBytes
end

local cf = credit.fields
cf.magic = ProtoField.uint16("ethx_credit.magic", "Magic", base.HEX)
cf.freed_requests = ProtoField.uint32("ethx_credit.freed_requests",
                                      "Bytes freed, requests class (running total)")
cf.freed_responses = ProtoField.uint32("ethx_credit.freed_responses",
                                       "Bytes freed, responses class (running total)")

local function is_credit_update(tvb)
  return tvb:len() >= kCreditBytes and tvb(0, 2):uint() == kCreditMagic
end

local function dissect_credit(tvb, pinfo, tree)
  local root = tree:add(credit, tvb(0, kCreditBytes))
  root:add(cf.magic, tvb(0, 2))
  root:add(cf.freed_requests, tvb(2, 4))
  root:add(cf.freed_responses, tvb(6, 4))
  pinfo.cols.info = string.format("credit update: freed requests %d, responses %d",
                                  tvb(2, 4):uint(), tvb(6, 4):uint())
  return tvb:len()
end

-- A link-control frame of flow control, or a load/store frame.
local function dissect_body(tvb, pinfo, tree)
  if is_credit_update(tvb) then return dissect_credit(tvb, pinfo, tree) end
  return dissect_fabric(tvb, pinfo, tree)
end

function ethx.dissector(tvb, pinfo, tree)
  pinfo.cols.protocol = "ethx"
  if not has_llr_trailer(tvb) then return dissect_body(tvb, pinfo, tree) end
  local len = tvb:len()
  if len > kLlrTrailerBytes then dissect_body(tvb(0, len - kLlrTrailerBytes):tvb(), pinfo, tree) end
  local text = add_llr_trailer(tree, tvb)
  if len == kLlrTrailerBytes then
    pinfo.cols.info = text
  else
    pinfo.cols.info = tostring(pinfo.cols.info) .. " [" .. text .. "]"
  end
  return len
end

function echo.dissector(tvb, pinfo, tree)
  pinfo.cols.protocol = "ethx-echo"
  tree:add(echo, tvb()):append_text(string.format(", %d B of payload", tvb:len()))
  pinfo.cols.info = string.format("echo, %d B", tvb:len())
  return tvb:len()
end

local ethertypes = DissectorTable.get("ethertype")
ethertypes:add(0x88B5, ethx)
ethertypes:add(0x88B6, echo)
