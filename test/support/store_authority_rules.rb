# frozen_string_literal: true

module LeaseMachines
  module TestSupport
    # The property test every networked store runs (PostgreSQL, Redis): the same random requests, spread over
    # several Store objects on one database, get the same decisions as in-memory authorities (one per resource), and
    # each store reads back the authority's checkpoint after every step.
    module StoreAuthorityRules
      # Runs the random requests (SEED, default 27) against +stores+ in turn.
      def assert_same_decisions_as_the_authority(stores, steps: 600)
        random = Random.new(Integer(ENV.fetch("SEED", 27)))
        authorities = Hash.new { |hash, key| hash[key] = LeaseMachines::Authority.new(clock_policy: :clamp) }
        tokens = Hash.new { |hash, key| hash[key] = [0] }
        now = 1_000.0
        iterations(steps).times do |step|
          resource = %w[a b c].sample(random: random)
          owner = random.rand(3)
          token = tokens[resource].sample(random: random) + random.rand(2)
          ttl = [0.0, 0.5, 2.0, 5.0].sample(random: random)
          now += [-1.0, 0.0, 0.25, 1.0, 3.0].sample(random: random)
          kind = %i[acquire reacquire renew release transfer].sample(random: random)
          args = { resource: resource, owner: owner, now: now }
          args.merge!(ttl: ttl) unless kind == :release
          args.merge!(token: token) if %i[renew release transfer].include?(kind)
          expected = authority_answer(authorities, resource, kind, args)
          store = stores[step % stores.size]
          actual = store.public_send(kind, **args.merge(kind == :transfer ? { new_owner: (owner + 1) % 3 } : {}))
          assert_equal expected, actual, "step #{step}: #{kind} #{args}"
          tokens[resource] << actual.lease.token if actual.lease
          assert_equal authorities[resource].checkpoint, stores[(step + 1) % stores.size].checkpoint(resource: resource)
        end
      end

      # The authority's answer, with a transfer made of its two decisions as the store defines it: a release, then a
      # grant to the new owner; when the grant is refused, the release is undone but for the watermark.
      def authority_answer(authorities, resource, kind, args)
        authority = authorities[resource]
        args = args.except(:resource)
        return authority.public_send(kind, **args) unless kind == :transfer

        before = authority.checkpoint
        released = authority.release(**args.except(:ttl))
        return released unless released.released?

        granted = authority.acquire(owner: (args[:owner] + 1) % 3, now: args[:now], ttl: args[:ttl])
        return LeaseMachines::Decision.new(status: :transferred, lease: granted.lease, reason: nil) if granted.granted?

        kept = LeaseMachines::Checkpoint.new(last_issued: before.last_issued, lease: before.lease,
                                             observed: authority.observed)
        authorities[resource] = LeaseMachines::Authority.restore(kept, clock_policy: :clamp)
        granted
      end
    end
  end
end
