# frozen_string_literal: true

# Long fault soaks, outside the suite (which runs them for about 20 s): each runs one test file's soak for
# LEASE_MACHINES_SOAK_SECONDS (default 60) and prints the checker's summary at the end.
SOAKS = {
  postgres: ["test/store/postgresql_faults_test.rb", "/never_break/",
             "Soak the PostgreSQL store under faults: SIGKILLed workers, server crashes, a host cut off"],
  redis: ["test/store/redis_faults_test.rb", "/never_let/",
          "Soak the Redis store (its fence in PostgreSQL) under faults: SIGKILLed workers, Redis crashes with and " \
          "without its AOF, a host cut off"],
  mysql: ["test/store/mysql_faults_test.rb", "/never_break/",
          "Soak the MySQL store (MariaDB) under faults: SIGKILLed workers, server crashes (SIGKILL), a host cut off"],
  postgres_failover: ["test/store/postgresql_failover_faults_test.rb", "/never_repeat/",
                      "Soak the PostgreSQL store under failovers to an asynchronous standby that lagged: " \
                      "SIGKILLed workers, the primary stopped -m immediate, the standby promoted"],
  redis_failover: ["test/store/redis_failover_faults_test.rb", "/never_repeat/",
                   "Soak the Redis store (its fence in PostgreSQL) under replication faults: SIGKILLed workers, " \
                   "failovers and failbacks to a replica cut off, crashes under appendfsync everysec"]
}.freeze

namespace :soak do
  SOAKS.each do |name, (file, test, what)|
    desc "#{what}; LEASE_MACHINES_SOAK_SECONDS long (default 60), the checker's summary at the end " \
         "(histories kept in tmp/ on a violation)"
    task name => :compile do
      env = { "LEASE_MACHINES_SOAK_SECONDS" => ENV.fetch("LEASE_MACHINES_SOAK_SECONDS", "60") }
      sh env, FileUtils::RUBY, "-Ilib", "-Itest", file, "-n", test
    end
  end
end
