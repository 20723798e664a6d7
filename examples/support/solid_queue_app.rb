# frozen_string_literal: true

require "fileutils"
require "yaml"

# A minimal Rails application whose jobs run on Solid Queue's own processes, and those processes: what
# bin/nightly-report --solid-queue (examples/nightly_report/solid_queue.rb) and the suite's Solid Queue tests
# (test/support/solid_queue_lost_app.rb) share. Rails (its ActiveRecord and ActiveJob railties) and solid_queue are
# loaded before it, lease_machines after them (so its Railtie is there, as in an application).
#
# - The application (SolidQueueApp.boot): its root a scratch directory holding config/database.yml (the application's
#   database, where the leases and their fence are; or a queue database besides, Rails 8's layout:
#   config.solid_queue.connects_to = { database: { writing: :queue } }), ActiveJob's :solid_queue adapter, eager
#   loading off, a silent logger, and Solid Queue's tables. Its initializer configures the lease store as an
#   application's config/initializers/lease_machines.rb would: one LeaseMachines::Store, opened before Solid Queue
#   forks, which each forked process opens again, one per thread (Store#reopen).
# - Solid Queue's processes (SolidQueueApp.supervise): SolidQueue::Supervisor.start(mode: :fork) in a child, a worker
#   process per queue (one thread, polling every 50 ms), so that a job that stops its process stops no other job, and
#   a dispatcher that moves the retries retry_job schedules to their queues every 50 ms (and maintains the
#   concurrency limits every 100 ms); stopped with SIGTERM, as a deploy stops them.
module SolidQueueApp
  # How long Solid Queue's processes may take to boot, and the supervisor to stop.
  START_TIMEOUT = 30
  STOP_TIMEOUT = 20

  module_function

  # Configures and initializes +application+ (an empty Rails::Application subclass, the process's only one) rooted at
  # +root+, on the application's database (+database+: the keys of config/database.yml, with a +url+ on PostgreSQL),
  # Solid Queue's tables in it or in +queue_database+ (a SQLite path or a postgresql:// URL); the block is the lease
  # store its initializer configures (called there, once, before anything forks). Then loads Solid Queue's schema.
  def boot(application, root:, database:, postgres:, queue_database: nil, &store)
    write_database_yml(root, database, postgres: postgres, queue_database: queue_database)
    sqlite_as_in_rails8 unless postgres
    application.class_eval do
      config.load_defaults "#{Rails::VERSION::MAJOR}.#{Rails::VERSION::MINOR}"
      config.root = root
      config.eager_load = false
      config.enable_reloading = false
      config.logger = ActiveSupport::Logger.new(File::NULL)
      config.secret_key_base = name
      config.active_job.queue_adapter = :solid_queue
      config.solid_queue.connects_to = { database: { writing: :queue } } if queue_database

      # config/initializers/lease_machines.rb: one Store, opened here, before Solid Queue forks its processes; each
      # of them opens it again (Store#reopen), one per thread. Not a factory.
      initializer("solid_queue_app.lease_store") { LeaseMachines::Jobs.store = store.call }
    end
    Rails.application.initialize!
    load_queue_schema(queue_database)
  end

  # config/database.yml: the application's database, and Solid Queue's when it has one of its own.
  def write_database_yml(root, database, postgres:, queue_database:)
    primary = database.to_h { |key, value| [key.to_s, value.is_a?(Symbol) ? value.to_s : value] }
    databases = if queue_database
                  queue = primary.merge(postgres ? "url" : "database" => queue_database)
                  { "primary" => primary, "queue" => queue.merge("migrations_paths" => "db/queue_migrate") }
                else
                  primary
                end
    FileUtils.mkdir_p(File.join(root, "config"))
    File.write(File.join(root, "config", "database.yml"), { Rails.env.to_s => databases }.to_yaml)
  end

  # On Rails 7.2, SQLite's connections as Rails 8 has them. Rails 8 waits for SQLite's write lock with sqlite3's
  # busy_handler_timeout, which lets the process's other threads run; 7.2's busy timeout waits in C holding the GVL,
  # so a thread of Solid Queue's waiting for the lock that another thread of its process holds (the dispatcher's
  # poller, and its concurrency maintenance, which writes under limits_concurrency) stalls that thread until the
  # timeout runs out, and every process with it ("database is locked"). And Rails 8 silences sqlite3's warning, in a
  # forked child, that the parent's connections were closed there: ActiveRecord's, and the lease store's, which the
  # child opens again.
  def sqlite_as_in_rails8
    return unless ActiveRecord.version < Gem::Version.new("8.0")

    require "sqlite3"
    SQLite3::ForkSafety.suppress_warnings!
    ActiveSupport.on_load(:active_record_sqlite3adapter) do
      prepend(Module.new do
        def configure_connection
          super
          timeout = @config[:timeout]
          @raw_connection.busy_handler_timeout = self.class.type_cast_config_to_integer(timeout) if timeout
        end
      end)
    end
  end

  # Solid Queue's tables, from the schema its installer writes to db/queue_schema.rb: in the queue database (what
  # bin/rails db:prepare does there), or in the application's.
  def load_queue_schema(queue_database)
    ActiveRecord::Migration.verbose = false
    schema = SolidQueue::Engine.root.join("lib/generators/solid_queue/install/templates/db/queue_schema.rb")
    return load(schema) unless queue_database

    begin
      ActiveRecord::Base.establish_connection(:queue)
      load schema
    ensure
      ActiveRecord::Base.establish_connection
    end
  end

  # The supervisor's options, as config/queue.yml would list them: a worker process for each of +queues+, and a
  # dispatcher.
  def processes(queues)
    {
      mode: :fork, config_file: nil, skip_recurring: true,
      workers: queues.map { { queues: _1, threads: 1, processes: 1, polling_interval: 0.05 } },
      dispatchers: [{ polling_interval: 0.05, concurrency_maintenance_interval: 0.1 }]
    }.freeze
  end

  # Forks Solid Queue's supervisor with +processes+ (see #processes) and yields its pid and whether every process it
  # supervises registered within START_TIMEOUT; stops it (#stop) however the block ends. Returns the block's value.
  def supervise(processes)
    ActiveRecord::Base.connection_handler.clear_all_connections! # no SQLite or PostgreSQL connection crosses a fork
    supervisor = fork { SolidQueue::Supervisor.start(**processes) }
    yield supervisor, wait_for(START_TIMEOUT) { up?(supervisor, processes) }
  ensure
    stop(supervisor) if supervisor
  end

  # Whether the supervisor (+pid+) has registered its processes, every worker and the dispatcher: they poll.
  def up?(pid, processes)
    supervisor = SolidQueue::Process.where(pid: pid, kind: "Supervisor(fork)").select(:id)
    expected = processes[:workers].size + processes[:dispatchers].size
    SolidQueue::Process.where(supervisor_id: supervisor).count == expected
  end

  # The jobs of +jobs+ (a SolidQueue::Job relation) still to finish, failed ones aside: scheduled (a retry), blocked,
  # ready or running.
  def unfinished(jobs = SolidQueue::Job.all)
    jobs.where(finished_at: nil).where.not(id: SolidQueue::FailedExecution.select(:job_id))
  end

  # SIGTERM, as a deploy stops Solid Queue: the supervisor stops its processes (SIGTERM, then SIGQUIT after
  # SolidQueue.shutdown_timeout) and exits. SIGKILL if it has not within STOP_TIMEOUT.
  def stop(supervisor)
    Process.kill(:TERM, supervisor)
    return if wait_for(STOP_TIMEOUT) { Process.waitpid(supervisor, Process::WNOHANG) }

    Process.kill(:KILL, supervisor)
    Process.waitpid(supervisor)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  # The block's value once it is truthy (asked every 20 ms), or nil after +timeout+ seconds.
  def wait_for(timeout)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      value = yield
      return value if value
      return if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end
end
