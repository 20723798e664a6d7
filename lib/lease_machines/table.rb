# frozen_string_literal: true

module LeaseMachines
  # A lease granted by a Table: the resource (String) it is for, +owner+ and +token+ (Integers), +issued_at+ and
  # +expires_at+ (Float seconds from the table's clock origin), the resource's +revision+ when the lease was written,
  # and the election +term+ of a leadership lease (+nil+ otherwise). Live while +now < expires_at+.
  TableLease = Data.define(:resource, :owner, :token, :issued_at, :expires_at, :revision, :term) do
    # Whether the lease is live at +now+ (Float seconds): +now < expires_at+.
    def live?(now:) = now < expires_at

    # Seconds left at +now+ (Float), 0.0 once expired.
    def remaining(now:) = [expires_at - now, 0.0].max

    # A FencedWrite carrying this lease's token for +operation+ (any frozen object: a String, a Symbol), or +nil+
    # when the lease is not live at +now+.
    def fenced_write(operation, now:)
      FencedWrite.new(resource:, owner:, token:, operation:) if live?(now:)
    end
  end

  # A write to +resource+ by +owner+ under the lease with +token+; +operation+ says what it does. A FenceGuard
  # checks it.
  FencedWrite = Data.define(:resource, :owner, :token, :operation)

  # The highest +token+ a FenceGuard accepted for +resource+, and the +owner+ whose write set it.
  FenceMark = Data.define(:resource, :token, :owner)

  # One accepted change to one resource of a Table: +kind+ (+:acquired+, +:reacquired+, +:renewed+, +:released+,
  # +:transferred+, +:reaped+), +at+ (Float seconds), the lease's +owner+, +token+, +expires_at+ and +term+ (after
  # the change; for a release or reap, the lease that ended), the resource's +revision+ after the change, and
  # +replaced+, the Lease record the change replaced (or +nil+).
  Event = Data.define(:resource, :kind, :at, :owner, :token, :revision, :expires_at, :term, :replaced) do
    # Every kind of event.
    def self.kinds = %i[acquired reacquired renewed released transferred reaped]
  end

  # A Table's figures at one instant. +rejections+ is a frozen Hash of every reason in REASONS to its count;
  # +highest_token+ is +nil+ before the first grant. Command and event counts cover the table's life since it was
  # created or read back.
  Metrics = Data.define(:resources, :stored_leases, :live_leases, :expired_leases, :highest_token, :events,
                        :accepted, :rejected, :rejections, :holder_transitions) do
    # The metrics read from their JSON document (format 1). Raises InvalidDocument.
    def self.from_json(json) = new(*LeaseMachines.send(:_metrics_from_json, json))

    # The metrics as a JSON document (format 1).
    def to_json(*) = LeaseMachines.send(:_metrics_to_json, deconstruct)
  end

  # What LeaseMachines.audit found: +valid+ (true when +findings+ is empty), +checked_events+ and the +findings+.
  AuditReport = Data.define(:valid, :checked_events, :findings) do
    # One broken rule: +code+ (a Symbol such as +:token_not_rising+), the +resource+, the offending event's
    # +event_index+ (from 0) and a +message+ for people.
    self::Finding = Data.define(:code, :resource, :event_index, :message)

    # Every finding code.
    def self.codes = %i[token_not_rising revision_not_rising time_backwards overlapping_leases grant_while_live
                        renewal_shortened renewal_changed_token token_mismatch reap_unexpired not_live]

    # The report read from its JSON document (format 1). Raises InvalidDocument.
    def self.from_json(json) = build(*LeaseMachines.send(:_report_from_json, json))

    # @api private
    def self.build(checked_events, findings)
      findings = findings.map { |finding| self::Finding.new(*finding) }.freeze
      new(valid: findings.empty?, checked_events:, findings:)
    end

    def valid? = valid

    # The report as a JSON document (format 1).
    def to_json(*) = LeaseMachines.send(:_report_to_json, checked_events, findings.map(&:deconstruct))
  end

  # What Table#reap_expired returns: the TableLeases reaped, in resource order, and +reason+ (+:clock_regressed+
  # when the whole sweep was refused, +nil+ otherwise).
  Reaping = Data.define(:leases, :reason) do
    def rejected? = !reason.nil?
  end

  # What Table#apply_batch returns: one Decision per command, in order, and how many were +accepted+ and
  # +rejected+.
  Batch = Data.define(:decisions, :accepted, :rejected)

  # Checks +events+ (an Array of Event, such as Table#events or LeaseMachines.events_from_json) against the rules
  # every table history keeps and returns an AuditReport. Raises TypeError for anything but Events.
  def self.audit(events) = AuditReport.build(*_audit(event_rows(events)))

  # +events+ as a JSON event log (format 1).
  def self.events_to_json(events) = _events_to_json(event_rows(events))

  # The Events of a JSON event log. Raises InvalidDocument.
  def self.events_from_json(json) = _events_from_json(json).map { |row| Event.new(*row) }.freeze

  # @api private
  def self.event_rows(events)
    raise TypeError, "events must be an Array of LeaseMachines::Event, got #{events.class}" unless events.is_a?(Array)

    events.map do |event|
      raise TypeError, "events must hold LeaseMachines::Event, got #{event.class}" unless event.is_a?(Event)

      event.deconstruct
    end
  end

  singleton_class.send(:private, :_audit, :_events_to_json, :_events_from_json, :_metrics_to_json,
                       :_metrics_from_json, :_report_to_json, :_report_from_json, :event_rows)

  # Leases on many named resources (Strings), decided by the Authority's rules, each resource with its own token
  # namespace and a revision that rises on every accepted change; plus transfer, reaping, batches, an audit Event
  # per accepted change (the newest +event_capacity+ are kept), metrics and a JSON checkpoint. Times are Float
  # seconds; owners and tokens Integers in 0..2**64-1. Rejections come back as Decisions; malformed input raises
  # before anything changes. See README.md, "Many resources".
  class Table
    # The keys of a batch entry: +:command+ plus the keywords of the method of that name.
    BATCH_KEYS = %i[command resource now owner token new_owner ttl expected_revision].freeze

    # Which keys each batch command needs.
    BATCH_REQUIRED = {
      acquire: %i[resource now owner ttl], reacquire: %i[resource now owner ttl],
      renew: %i[resource now owner token ttl], release: %i[resource now owner token],
      transfer: %i[resource now owner token new_owner ttl], reap: %i[resource now]
    }.freeze

    # An empty table. +clock_policy+ is +:reject+ or +:clamp+ (see Authority.new); +event_capacity+ (Integer) is how
    # many of the newest events #events keeps.
    def self.new(clock_policy: :reject, event_capacity: 4096) = _new(clock_policy, event_capacity)

    # The table a #to_json document describes, with fresh counters and an empty event log. Raises InvalidDocument
    # for a document that is not format 1 or describes state no table can produce (the message lists every issue).
    def self.from_json(json, clock_policy: :reject, event_capacity: 4096)
      _from_json(json, clock_policy, event_capacity)
    end

    # Grants +resource+ to +owner+ at +now+ for +ttl+ when no lease is live on it, with the next token of the
    # resource. With +expected_revision+ (Integer) it is a compare-and-set: +:revision_mismatch+ unless the
    # resource's revision is that (0 for a resource never changed).
    def acquire(resource:, owner:, now:, ttl:, expected_revision: nil)
      _acquire(resource, owner, now, ttl, expected_revision)
    end

    # Like #acquire, but the owner of the live lease gets a new lease with a greater token (its old token is stale).
    def reacquire(resource:, owner:, now:, ttl:) = _reacquire(resource, owner, now, ttl)

    # Extends the live lease to max(expires_at, now + ttl), same token and issued_at.
    def renew(resource:, owner:, token:, now:, ttl:) = _renew(resource, owner, token, now, ttl)

    # Gives the lease back; the token high-water stays.
    def release(resource:, owner:, token:, now:) = _release(resource, owner, token, now)

    # The holder (+owner+ with +token+) hands the lease to +new_owner+, who gets a new, greater token, issued at
    # +now+ and expiring at +now + ttl+: status +:transferred+. The old token is fenced from then on.
    def transfer(resource:, owner:, token:, new_owner:, now:, ttl:)
      _transfer(resource, owner, token, new_owner, now, ttl)
    end

    # Drops the expired lease record of +resource+ (status +:reaped+); +:occupied+ while it is live, +:not_held+
    # when there is none. The token high-water stays.
    def reap(resource:, now:) = _reap(resource, now)

    # Reaps every lease expired at +now+; returns a Reaping.
    def reap_expired(now:)
      leases, reason = _reap_expired(now)
      Reaping.new(leases: leases.freeze, reason:)
    end

    # Grants +owner+ a leadership lease on the strength of +certificate+ (a QuorumCertificate from
    # Election.certify_votes): only when it is valid (+:no_quorum+), elected +owner+ (+:not_leader+) and its term is
    # greater than every term used for the resource (+:stale_term+). Another owner's live lease is +:occupied+; the
    # owner's own is rotated. The lease records the term.
    def acquire_leadership(resource:, certificate:, owner:, now:, ttl:)
      _acquire_leadership(resource, Election.certificate_row(certificate), owner, now, ttl)
    end

    # Applies +commands+ in order, each a Hash with +:command+ (+:acquire+, +:reacquire+, +:renew+, +:release+,
    # +:transfer+, +:reap+) and that method's keywords; every decision is kept and a rejected command changes
    # nothing. Every entry is checked before any is applied: a malformed one raises and the table is unchanged.
    def apply_batch(commands)
      raise TypeError, "commands must be an Array of Hashes, got #{commands.class}" unless commands.is_a?(Array)

      rows = commands.each_with_index.map { |command, index| batch_row(command, index) }
      decisions, accepted, rejected = _apply_batch(rows)
      Batch.new(decisions: decisions.freeze, accepted:, rejected:)
    end

    # The lease record of +resource+ (live or expired), or +nil+.
    def lease(resource) = _lease(resource)

    # The revision of +resource+: how many accepted changes it has seen (0 when unknown).
    def revision(resource) = _revision(resource)

    # The greatest token issued for +resource+, or +nil+.
    def last_issued(resource) = _last_issued(resource)

    # The greatest election term used for +resource+, or +nil+.
    def term(resource) = _term(resource)

    # The events kept, oldest first (frozen Array of Event).
    def events = _events.map { |row| Event.new(*row) }.freeze

    # The table's Metrics at +now+ (Float seconds; a pure query).
    def metrics(now:) = Metrics.new(*_metrics(now))

    # The table's state as a JSON document (format 1, see core/FORMAT.md): what Table.from_json reads.
    def to_json(*) = _to_json

    private

    def batch_row(command, index)
      raise TypeError, "commands[#{index}] must be a Hash, got #{command.class}" unless command.is_a?(Hash)

      unknown = command.keys - BATCH_KEYS
      raise ArgumentError, "commands[#{index}] has unknown keys #{unknown.inspect}" unless unknown.empty?

      missing = BATCH_REQUIRED.fetch(command[:command], []) - command.keys
      raise ArgumentError, "commands[#{index}] (#{command[:command].inspect}) misses #{missing.inspect}" if missing.any?

      BATCH_KEYS.map { |key| command[key] }
    end

    private(*%i[_acquire _reacquire _renew _release _transfer _reap _reap_expired _acquire_leadership _apply_batch
                _lease _revision _last_issued _term _events _metrics _to_json])
  end

  # Storage-side fencing for many resources: accepts a FencedWrite iff its token is at least the highest token it
  # accepted for that resource (equal tokens stay valid for the many writes of one lease). Marks only rise.
  class FenceGuard
    # A guard restored from the FenceMarks it persisted (#marks). Raises ArgumentError for two marks of one resource.
    def self.new(marks: [])
      raise TypeError, "marks must be an Array of LeaseMachines::FenceMark" unless marks.is_a?(Array)

      _new(marks.map do |mark|
        raise TypeError, "marks must hold LeaseMachines::FenceMark, got #{mark.class}" unless mark.is_a?(FenceMark)

        [mark.resource, mark.token, mark.owner]
      end)
    end

    # The guard a #to_json document describes. Raises InvalidDocument.
    def self.from_json(json) = _from_json(json)

    # Whether +write+ (a FencedWrite) may happen: true, and its token becomes the resource's mark, iff the token is
    # at least the mark; false, and nothing changes, otherwise. Token 0 is never accepted.
    def check(write)
      raise TypeError, "write must be a LeaseMachines::FencedWrite, got #{write.class}" unless write.is_a?(FencedWrite)

      _check(write.resource, write.owner, write.token)
    end

    # The highest token accepted for +resource+, or +nil+.
    def highest(resource) = _highest(resource)

    # Every resource's FenceMark, in resource order: what to persist.
    def marks = _marks.map { |row| FenceMark.new(*row) }.freeze

    # The marks as a JSON document (format 1).
    def to_json(*) = _to_json

    private :_check, :_highest, :_marks, :_to_json
  end

  [Table, FenceGuard].each do |klass|
    klass.singleton_class.send(:private, :_new, :_from_json)
  end
end
