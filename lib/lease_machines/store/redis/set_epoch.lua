local now = history()
if not now then return {'history'} end
if tonumber(redis.call('HGET', KEYS[1], 'epoch') or '-1') >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'history', now)
redis.call('HDEL', KEYS[1], 'run_id')
return 1
