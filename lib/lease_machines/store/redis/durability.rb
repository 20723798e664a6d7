# frozen_string_literal: true

# The durability of the Redis store: what the server promises of a committed decision (its tier and replicas,
# read once on connect), and the servers it refuses.

module LeaseMachines
  class Store
    class Redis < Adapter
      # What each tier promises, for #durability's promise.
      TIER_PROMISES = {
        memory: "no AOF: a restart loses every grant since the last snapshot",
        aof_no: "appendfsync no: a crash of Redis loses nothing it answered, a crash of the machine what the OS " \
                "had not written yet (up to about 30 s)",
        aof_everysec: "appendfsync everysec: a crash of the machine can lose the last second or two of grants",
        aof_always: "appendfsync always: every decision is on disk before it is answered"
      }.freeze
      private_constant :TIER_PROMISES

      private

      # Durability, and the refusals: a policy that evicts, a replica, a tier below +strict+, too few replicas.
      def inspect_server(strict)
        *settings, replication = @client.pipelined do |pipeline|
          %w[maxmemory-policy appendonly appendfsync save].each { pipeline.call("CONFIG", "GET", _1) } # one each: 6.2
          pipeline.call("INFO", "replication")
        end
        config = settings.flat_map { pairs(_1) }.to_h
        policy = config["maxmemory-policy"]
        unless policy == "noeviction"
          refuse("its maxmemory-policy is #{policy}: Redis may evict a lease's row, and its tokens would be issued " \
                 "again; set maxmemory-policy noeviction")
        end
        role = replication[/^role:(\w+)/, 1]
        refuse("it is a replica (role:#{role}), which takes no writes; connect to the primary") unless role == "master"
        replicas = replication[/^connected_slaves:(\d+)/, 1].to_i
        tier = tier_of(config)
        if strict && TIERS.index(tier) < TIERS.index(strict)
          refuse("it promises #{tier.inspect} (#{TIER_PROMISES.fetch(tier)}), below strict: #{strict.inspect}")
        end
        refuse("wait: #{@wait}, but #{replicas} replicas are connected") if @wait > replicas
        Durability.new(tier: tier, replicas: replicas, wait: @wait, promise: promise(tier, config, replicas))
      end

      def tier_of(config)
        return :memory unless config["appendonly"] == "yes"

        { "always" => :aof_always, "everysec" => :aof_everysec }.fetch(config["appendfsync"], :aof_no)
      end

      def promise(tier, config, replicas)
        text = TIER_PROMISES.fetch(tier)
        snapshots = !config["save"].to_s.empty?
        text = text.sub("since the last snapshot", "(no snapshots either)") if tier == :memory && !snapshots
        if @wait.positive?
          "#{text}; each commit reached #{@wait} of its #{replicas} replicas (WAIT) before it was answered"
        elsif replicas.positive?
          "#{text}; a failover to one of its #{replicas} replicas can lose what it had not received (no wait:)"
        else
          text
        end
      end

      def refuse(why) = raise(StoreError, "#{@name} cannot keep leases: #{why}")
    end
  end
end
