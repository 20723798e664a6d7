local epoch = redis.call('HMGET', KEYS[2], 'epoch', 'history')
local time = redis.call('TIME')
local values = redis.call('HMGET', KEYS[1], unpack(ARGV))
values[#values + 1] = epoch[1]
values[#values + 1] = (epoch[2] and epoch[2] == history()) and 1 or 0
values[#values + 1] = time[1]
values[#values + 1] = time[2]
return values
