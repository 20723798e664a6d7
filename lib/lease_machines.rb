# frozen_string_literal: true

# Time-limited ownership with fencing tokens. See README.md for the story and the rules; every decision comes from
# the `lease-machines` Rust crate through the native extension loaded below.
#
# One concept per file under lib/lease_machines/. The records (value objects: Decision, Lease, Event, ...) are frozen
# Data classes declared first; the extension then builds them natively and reads them back by member name, and
# defines the mutable objects (Authority, Fence, Holder, Table, FenceGuard, Simulation), whose keyword methods the
# files after it add.

require_relative "lease_machines/version"
require_relative "lease_machines/errors"
require_relative "lease_machines/frozen_value"
require_relative "lease_machines/decision"
require_relative "lease_machines/lease"
require_relative "lease_machines/checkpoint"
require_relative "lease_machines/cadence"
require_relative "lease_machines/table_lease"
require_relative "lease_machines/slot_lease"
require_relative "lease_machines/fenced_write"
require_relative "lease_machines/fence_mark"
require_relative "lease_machines/event"
require_relative "lease_machines/metrics"
require_relative "lease_machines/audit_report"
require_relative "lease_machines/reaping"
require_relative "lease_machines/batch"
require_relative "lease_machines/candidate"
require_relative "lease_machines/election_vote"
require_relative "lease_machines/equivocation"
require_relative "lease_machines/quorum_certificate"
require_relative "lease_machines/simulation_config"
require_relative "lease_machines/simulation_report"

# Fat native gems carry one extension per Ruby minor under lib/lease_machines/X.Y/; a source build puts it at
# lib/lease_machines/lease_machines_native.so. Only a missing fat extension falls back to the source build: one that
# is there but cannot load (a glibc older than 2.17, say) raises its own LoadError, which names the cause.
fat_extension = "lease_machines/#{RUBY_VERSION[/\A\d+\.\d+/]}/lease_machines_native"
begin
  require fat_extension
rescue LoadError => e
  raise unless e.path == fat_extension

  require "lease_machines/lease_machines_native"
end

require_relative "lease_machines/authority"
require_relative "lease_machines/fence"
require_relative "lease_machines/holder"
require_relative "lease_machines/table"
require_relative "lease_machines/fence_guard"
require_relative "lease_machines/election"
require_relative "lease_machines/simulation"

# In a Rails application (Rails is loaded before the application's gems), the Railtie: holds_lease on every job class
# and config.lease_machines.
require_relative "lease_machines/railtie" if defined?(::Rails::Railtie)
