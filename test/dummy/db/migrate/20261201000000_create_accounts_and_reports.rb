# frozen_string_literal: true

class CreateAccountsAndReports < ActiveRecord::Migration[7.2]
  def change
    create_table(:accounts) { |t| t.string :name }
    create_table(:reports) { |t| t.string :body; t.integer :token }
  end
end
