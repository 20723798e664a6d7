local function history()
  local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
  local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')
  if run_id and replid then return run_id .. ':' .. replid end
end
