local stamp = redis.call('HGET', KEYS[1], 'stamp') or ''
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local raced = stamp ~= ARGV[1]
local moved = raced
local change = ARGV[12] ~= ''
if not moved and ARGV[7] ~= '' then
  local at = tonumber(ARGV[7])
  moved = at > now or at < now - tonumber(ARGV[8])
end
if not moved and ARGV[6] ~= '' then
  local epoch = redis.call('HMGET', KEYS[6], 'epoch', 'history')
  if (epoch[1] or '-') ~= ARGV[6] then
    moved = true
  elseif epoch[2] == false or epoch[2] ~= history() then
    return {'epoch'}
  end
end
local claim = redis.call('HMGET', KEYS[1], 'claim', 'claimant')
if not moved and not change and claim[2] ~= ARGV[14] then
  local at = tonumber(claim[1] or '')
  moved = at ~= nil and at > now - tonumber(ARGV[13]) and at <= now
end
if moved then
  local row = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires_at', 'last_issued', 'observed', 'revision')
  local epoch = redis.call('HGET', KEYS[6], 'epoch')
  if change and raced and stamp ~= ARGV[2] and stamp ~= '' then
    redis.call('HSET', KEYS[1], 'claim', now, 'claimant', ARGV[14])
  end
  return {'moved', stamp, row[1], row[2], row[3], row[4], row[5], row[6], epoch, time[1], time[2]}
end
redis.call('HLEN', KEYS[2])
redis.call('XLEN', KEYS[3])
redis.call('ZCARD', KEYS[5])
local id = redis.call('INCR', KEYS[4])
local function words(text)
  local list = {}
  for word in string.gmatch(text, '%S+') do list[#list + 1] = word end
  return list
end
local deletes, sets = words(ARGV[9]), words(ARGV[10])
if #deletes > 0 then redis.call('HDEL', KEYS[2], unpack(deletes)) end
if #sets > 0 then redis.call('HSET', KEYS[2], unpack(sets)) end
redis.call('HSET', KEYS[1], 'stamp', ARGV[2])
if claim[1] and (change or claim[2] == ARGV[14]) then redis.call('HDEL', KEYS[1], 'claim', 'claimant') end
redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[4], string.format('%d-0', id), unpack(words(ARGV[11])))
local cutoff = tonumber(ARGV[5])
for _, entry in ipairs(redis.call('XRANGE', KEYS[3], '-', '+', 'COUNT', 2)) do
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'at' then
      local at_entry = tonumber(fields[i + 1])
      if at_entry and at_entry < cutoff then redis.call('XDEL', KEYS[3], entry[1]) end
      break
    end
  end
end
redis.call('ZADD', KEYS[5], 0, ARGV[3])
return {id, time[1], time[2]}
